#!/usr/bin/env python3
"""Offline consistency checks of deploy/ that no off-the-shelf linter makes.

  check-deploy.py BINARY METRICS_FILE

- compose.yaml: the Compose structure (top-level keys, each service has an image or a build,
  relative bind mounts exist, named volumes are declared, ports are strings), used when
  `docker compose config` is not available (it needs the compose plugin).
- Every AASA_EDGE_* variable named in the Dockerfile, compose.yaml, the systemd environment file
  and the Kubernetes manifests is one `BINARY serve --help` lists (a typo would be silently
  ignored by the edge).
- Every aasa_edge_* metric the Grafana dashboard queries appears in METRICS_FILE, a /metrics scrape
  of the real binary.
- prometheus.yml and the Grafana provisioning files parse and point at each other.
"""
import json
import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEPLOY = os.path.join(ROOT, "deploy")
problems = []


def problem(text):
    problems.append(text)
    print("  ✗ " + text)


def read(path):
    with open(os.path.join(DEPLOY, path), encoding="utf-8") as f:
        return f.read()


def check_compose():
    compose_dir = os.path.join(DEPLOY, "docker")
    doc = yaml.safe_load(read("docker/compose.yaml"))
    allowed = {"name", "services", "volumes", "networks", "configs", "secrets", "include"}
    for key in doc:
        if key not in allowed:
            problem(f"compose.yaml: unknown top-level key {key!r}")
    services = doc.get("services") or {}
    expected = {"edge", "prometheus", "grafana", "postgres", "edge-1", "edge-2", "edge-3", "balancer", "tier-parent", "tier-child"}
    if set(services) != expected:
        problem(f"compose.yaml: services are {sorted(services)}, expected {sorted(expected)}")
    declared = set((doc.get("volumes") or {}).keys())
    for name, service in services.items():
        if "image" not in service and "build" not in service:
            problem(f"compose.yaml: service {name} has neither image nor build")
        build = service.get("build")
        if isinstance(build, dict):
            context = os.path.normpath(os.path.join(compose_dir, build.get("context", ".")))
            dockerfile = os.path.join(context, build.get("dockerfile", "Dockerfile"))
            if not os.path.isfile(dockerfile):
                problem(f"compose.yaml: {name} builds from missing {dockerfile}")
        for port in service.get("ports", []):
            if not isinstance(port, str):
                problem(f"compose.yaml: {name} port {port!r} should be a quoted string")
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith((".", "/")):
                path = os.path.normpath(os.path.join(compose_dir, source))
                if not os.path.exists(path):
                    problem(f"compose.yaml: {name} mounts missing {source}")
            elif source not in declared:
                problem(f"compose.yaml: {name} uses undeclared volume {source}")
        for dependency in service.get("depends_on", []):
            if dependency not in services:
                problem(f"compose.yaml: {name} depends on unknown service {dependency}")
    check_cluster_profile(services)
    check_tiers_profile(services)
    print(f"  compose.yaml: {len(services)} services, {len(declared)} volumes")


def check_cluster_profile(services):
    """The cluster profile: every edge on the same store with its own node id, one admin token,
    and the balancer's upstreams are exactly those edges."""
    edges = {name: s for name, s in services.items() if name.startswith("edge-")}
    stores = {s.get("environment", {}).get("AASA_EDGE_STORE") for s in edges.values()}
    nodes = [s.get("environment", {}).get("AASA_EDGE_NODE_ID") for s in edges.values()]
    tokens = {s.get("environment", {}).get("AASA_EDGE_ADMIN_TOKEN") for s in edges.values()}
    if len(stores) != 1 or not str(next(iter(stores))).startswith("postgres://"):
        problem(f"compose.yaml: the cluster edges do not share one postgres:// store: {stores}")
    if sorted(nodes) != sorted(edges):
        problem(f"compose.yaml: cluster node ids {nodes} are not the service names {sorted(edges)}")
    if len(tokens) != 1:
        problem("compose.yaml: the cluster edges do not share one admin token")
    for name, service in list(edges.items()) + [("postgres", services.get("postgres", {})), ("balancer", services.get("balancer", {}))]:
        if service.get("profiles") != ["cluster"]:
            problem(f"compose.yaml: {name} is not in the cluster profile only")
    upstreams = set(re.findall(r"server (edge-\d):8080", read("docker/cluster/nginx.conf")))
    if upstreams != set(edges):
        problem(f"cluster/nginx.conf balances over {sorted(upstreams)}, the compose edges are {sorted(edges)}")


def check_tiers_profile(services):
    """The tiers profile: the child's parent is the parent service's address, each tier has its
    own node id and volume, and only the parent fetches origins (no AASA_EDGE_PARENT on it)."""
    parent, child = services.get("tier-parent", {}), services.get("tier-child", {})
    for name, service in (("tier-parent", parent), ("tier-child", child)):
        if service.get("profiles") != ["tiers"]:
            problem(f"compose.yaml: {name} is not in the tiers profile only")
    env_parent, env_child = parent.get("environment", {}), child.get("environment", {})
    if env_child.get("AASA_EDGE_PARENT") != "http://tier-parent:8080":
        problem(f"compose.yaml: tier-child's AASA_EDGE_PARENT is {env_child.get('AASA_EDGE_PARENT')!r}, not http://tier-parent:8080")
    if "AASA_EDGE_PARENT" in env_parent:
        problem("compose.yaml: tier-parent has a parent itself")
    if env_parent.get("AASA_EDGE_NODE_ID") == env_child.get("AASA_EDGE_NODE_ID"):
        problem("compose.yaml: the tiers share a node id (Via could not tell them apart; a loop would go unseen)")
    if set(parent.get("volumes", [])) & set(child.get("volumes", [])):
        problem("compose.yaml: the tiers share a volume (each has its own SQLite store)")


def check_variables(binary):
    help_text = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True, check=True).stdout
    known = set(re.findall(r"AASA_EDGE_[A-Z_]+", help_text))
    files = ["docker/Dockerfile", "docker/compose.yaml", "systemd/aasa-edge.env"] + [
        "k8s/" + f for f in sorted(os.listdir(os.path.join(DEPLOY, "k8s"))) if f.endswith(".yaml")] + [
        "k8s/cluster/" + f for f in sorted(os.listdir(os.path.join(DEPLOY, "k8s/cluster"))) if f.endswith(".yaml")] + [
        "k8s/tiers/" + f for f in sorted(os.listdir(os.path.join(DEPLOY, "k8s/tiers"))) if f.endswith(".yaml")]
    used = 0
    before = len(problems)
    for path in files:
        for name in set(re.findall(r"AASA_EDGE_[A-Z_]+[A-Z]", read(path))):
            used += 1
            if name not in known:
                problem(f"{path}: {name} is not a variable of `aasa-edge serve`")
    if len(problems) == before:
        print(f"  {used} variable uses in {len(files)} files, all known to `serve --help`")


def check_dashboard(metrics_file):
    with open(metrics_file, encoding="utf-8") as f:
        exported = set(re.findall(r"^(aasa_edge_[a-z_]+)", f.read(), re.M))
    dashboard = json.loads(read("grafana/aasa-edge.json"))
    queried = set()
    for panel in dashboard["panels"]:
        if not panel.get("targets"):
            problem(f"grafana: panel {panel['title']!r} has no query")
        for target in panel.get("targets", []):
            queried |= set(re.findall(r"aasa_edge_[a-z_]+", target["expr"]))
    for name in sorted(queried):
        if name not in exported:
            problem(f"grafana: {name} is not exported by /metrics")
    wanted = ["aasa_edge_requests_total", "aasa_edge_origin_fetches_total", "aasa_edge_origin_failures_total",
              "aasa_edge_origin_fetch_duration_seconds_bucket", "aasa_edge_hosts_cached", "aasa_edge_snapshot_versions_stored"]
    for name in wanted:
        if name not in queried:
            problem(f"grafana: the dashboard does not show {name}")
    print(f"  grafana: {len(dashboard['panels'])} panels query {len(queried)} metrics, all exported")


def check_prometheus_and_provisioning():
    prometheus = yaml.safe_load(read("docker/prometheus/prometheus.yml"))
    targets = [t for job in prometheus["scrape_configs"] for sc in job["static_configs"] for t in sc["targets"]]
    if "edge:8080" not in targets:
        problem("prometheus.yml does not scrape edge:8080")
    datasource = yaml.safe_load(read("docker/grafana-provisioning/datasources/prometheus.yaml"))["datasources"][0]
    if datasource.get("uid") != "prometheus" or "prometheus:9090" not in datasource.get("url", ""):
        problem("the Grafana datasource is not the compose Prometheus with uid 'prometheus'")
    dashboard = json.loads(read("grafana/aasa-edge.json"))
    uids = {t["datasource"]["uid"] for p in dashboard["panels"] for t in p.get("targets", [])}
    if uids != {"prometheus"}:
        problem(f"grafana: panels use datasource uids {sorted(uids)}, expected the provisioned 'prometheus'")
    yaml.safe_load(read("docker/grafana-provisioning/dashboards/aasa-edge.yaml"))
    print("  prometheus.yml and Grafana provisioning agree")


def main():
    binary, metrics_file = sys.argv[1], sys.argv[2]
    if os.environ.get("COMPOSE_CHECKED") != "1":
        check_compose()
    check_variables(binary)
    check_dashboard(metrics_file)
    check_prometheus_and_provisioning()
    if problems:
        print(f"check-deploy: {len(problems)} problem(s)")
        sys.exit(1)


if __name__ == "__main__":
    main()
