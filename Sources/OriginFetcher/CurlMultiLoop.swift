import EdgeModel
import CCurlShim
import Foundation

/// libcurl must be initialised once, before any thread uses it.
enum CurlGlobal {
    static let initialized: Bool = curl_global_init(Int(CURL_GLOBAL_ALL)) == CURLE_OK
}

/// One libcurl multi handle, driven by one dedicated thread. Transfers are handed over under a
/// lock and the thread is woken with `curl_multi_wakeup`; from then on a transfer is touched only
/// by this thread, until its completion handler runs (also on this thread).
final class CurlMultiLoop: @unchecked Sendable {
    private let multi: UnsafeMutableRawPointer
    private let lock = NSLock()
    private var pending: [Transfer] = []
    private var stopping = false
    private var stopped = false
    private let finished = DispatchSemaphore(value: 0)
    /// Owned by the loop thread.
    private var active: [UnsafeMutableRawPointer: Transfer] = [:]

    init() {
        precondition(CurlGlobal.initialized, "curl_global_init failed")
        multi = curl_multi_init()!
        // A small idle-connection cache: each host is refetched hours apart, and a connection is
        // only reusable for its own host name (TLS), so most cached connections would never be
        // used again, while each holds TLS state and buffers (tens of KB).
        _ = aasa_curl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, 32)
        let thread = Thread { [unowned self] in self.run() }
        thread.name = "aasa-edge curl"
        thread.start()
    }

    func submit(_ transfer: Transfer) {
        lock.lock()
        let accepted = !stopping
        if accepted { pending.append(transfer) }
        lock.unlock()
        if accepted {
            curl_multi_wakeup(multi)
        } else {
            transfer.finishWithoutRunning()
        }
    }

    /// Stops after the transfers in flight complete; idempotent.
    func stop() {
        lock.lock()
        let first = !stopping
        stopping = true
        lock.unlock()
        guard first else { return }
        curl_multi_wakeup(multi)
        finished.wait()
    }

    private func run() {
        var running: Int32 = 0
        while true {
            lock.lock()
            let arrivals = pending
            pending.removeAll()
            let shouldStop = stopping
            lock.unlock()
            for transfer in arrivals {
                if curl_multi_add_handle(multi, transfer.easy) == CURLM_OK {
                    active[transfer.easy] = transfer
                } else {
                    transfer.finish(code: CURLE_FAILED_INIT)
                }
            }
            curl_multi_perform(multi, &running)
            var left: Int32 = 0
            while let message = curl_multi_info_read(multi, &left) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
                let code = message.pointee.data.result
                curl_multi_remove_handle(multi, easy)
                if let transfer = active.removeValue(forKey: easy) {
                    transfer.finish(code: code)
                }
            }
            if shouldStop && active.isEmpty { break }
            curl_multi_poll(multi, nil, 0, 1000, nil)
        }
        curl_multi_cleanup(multi)
        finished.signal()
    }
}
