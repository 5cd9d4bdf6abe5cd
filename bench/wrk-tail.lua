-- wrk's --latency report stops at p99; this adds the tail after it (p99.9, p99.99), in ms.
done = function(summary, latency, requests)
  for _, p in ipairs({99.9, 99.99}) do
    io.write(string.format("tail p%g: %.3f ms\n", p, latency:percentile(p) / 1000))
  end
end
