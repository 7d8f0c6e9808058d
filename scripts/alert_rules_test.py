"""Writes `promtool test rules` cases for deploy/prometheus/postback-rules.yml from synthetic traffic.

Normal traffic: DAYS days of a receiver's counters sampled every 5 minutes, for three ad networks of
very different volume (thousands a day, two hundred and fifty a day, six a day), arriving in bursts
(clumps of postbacks: Apple's random delays release a device's postbacks together), with a daily
rhythm (±50%) and a weekend dip (a third fewer on Saturday and Sunday). The series carry the metric
names and labels the receiver exposes (Tests/PostbackServerTests/MetricsExpositionTests checks that
every name the rules read is on a real receiver's page).

Cases: "normal" asserts that no alert fires at any evaluation in the last week; each fault case
keeps the same traffic until FAULT_DAY, injects one failure, and asserts that its alert fires within
the time docs/alerts.md promises (and that it had not fired before the fault). Every alert of the
rules file is covered in both directions: a test fails when an alert has no fault case.

Usage: alert_rules_test.py RULES OUT_DIR [--days N] [--seed S]  (writes OUT_DIR/*.test.yml)
"""

import argparse
import json
import math
import random
import sys
from pathlib import Path

import yaml

STEP_MINUTES = 15
STEPS_PER_DAY = 24 * 60 // STEP_MINUTES
JOB = {"job": "postback", "instance": "receiver-1"}

# (ad network id, postbacks a day on an average weekday, mean clump size)
NETWORKS = [
    ("big.skadnetwork", 6000, 4.0),
    ("medium.skadnetwork", 250, 2.0),
    ("small.skadnetwork", 6, 1.5),
]
VALUE_SHARES = {"null": 0.22, "coarse": 0.30, "fine": 0.43, "fine-zero": 0.05}  # of winning postbacks
WIN_SHARE = 0.85


def series_name(name, labels):
    merged = dict(JOB, **labels)
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(merged.items()))
    return f"{name}{{{inner}}}"


def rhythm(step):
    """The share of a day's average arriving in this 5 minutes: daily sine, weekend dip."""
    day, minute = divmod(step * STEP_MINUTES, 24 * 60)
    daily = 1 + 0.5 * math.sin(2 * math.pi * (minute / (24 * 60) - 0.25))
    weekend = 0.67 if day % 7 in (5, 6) else 1.0
    return daily * weekend


def poisson(rng, mean):
    if mean <= 0:
        return 0
    if mean > 50:
        return max(0, int(round(rng.gauss(mean, math.sqrt(mean)))))
    limit, k, p = math.exp(-mean), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def arrivals(rng, per_day, clump, steps):
    """Postbacks per 5-minute step: clumps arrive as a Poisson process, each of geometric size."""
    out = []
    for step in range(steps):
        clumps = poisson(rng, per_day / STEPS_PER_DAY * rhythm(step) / clump)
        count = 0
        for _ in range(clumps):
            size = 1
            while rng.random() > 1 / clump:
                size += 1
            count += size
        out.append(count)
    return out


class Traffic:
    """Cumulative counters per series, sample by sample; faults edit the increments from a step on."""

    def __init__(self, days, seed, fault_step=None, fault=None):
        self.steps = days * STEPS_PER_DAY
        self.series = {}
        rng = random.Random(seed)
        for network, per_day, clump in NETWORKS:
            counts = arrivals(rng, per_day, clump, self.steps)
            postbacks, values = [], {v: [] for v in VALUE_SHARES}
            # The advertiser's developer copies: about 40% of the big network's postbacks also come
            # as a second copy (the advertiser receives them at a host of developer_copy_hosts).
            developer = []
            for step, count in enumerate(counts):
                shares = dict(VALUE_SHARES)
                copies = sum(1 for _ in range(count) if rng.random() < 0.4) if network == NETWORKS[0][0] else 0
                if fault_step is not None and step >= fault_step:
                    count, copies, shares = fault.traffic(network, count, copies, shares)
                postbacks.append(count)
                developer.append(copies)
                winning = sum(1 for _ in range(count) if rng.random() < WIN_SHARE)
                split = {v: 0 for v in shares}
                for _ in range(winning):
                    pick, edge = rng.random(), 0.0
                    for value, share in shares.items():
                        edge += share
                        if pick < edge:
                            split[value] += 1
                            break
                    else:
                        split["null"] += 1
                for value in values:
                    values[value].append(split.get(value, 0))
            self.counter("postback_network_postbacks_total", {"ad_network": network, "environment": "production", "copy": "network"}, postbacks)
            self.counter("postback_network_postbacks_total", {"ad_network": network, "environment": "production", "copy": "developer"}, developer)
            for value, increments in values.items():
                self.counter("postback_network_conversion_values_total", {"ad_network": network, "value": value}, increments)
        total = [0] * self.steps
        for network, *_ in NETWORKS:
            for i, x in enumerate(self.increments_of(network)):
                total[i] += x
        # Everything else a receiver exposes, as increments (counters) or values (gauges) per step.
        lanes = {
            "forged": [poisson(rng, 0.2) for _ in range(self.steps)],
            "quarantined": [0] * self.steps,
            "five_hundreds": [0] * self.steps,
            "storage_errors": [0] * self.steps,
            "dead": [0] * self.steps,
            "up": [1] * self.steps,
            "ready": [1] * self.steps,
            "storage_healthy": [1] * self.steps,
            "available": [0.4 * 100e9] * self.steps,
            "oldest_pending": [float(rng.randint(0, 120)) for _ in range(self.steps)],
            "forward_lag": [float(rng.randint(0, 60)) for _ in range(self.steps)],
            "damaged": [0] * self.steps,
        }
        if fault_step is not None:
            fault.other(fault_step, lanes)
        self.counter("postback_verdicts_total", {"protocol": "skadnetwork", "version": "4.0", "status": "verified", "environment": "production"}, total)
        self.counter("postback_verdicts_total", {"protocol": "skadnetwork", "version": "4.0", "status": "invalid-signature", "environment": "production"}, lanes["forged"])
        self.counter("postback_quarantined_total", {"reason": "unknown-version"}, lanes["quarantined"])
        self.counter("postback_http_requests_total", {"route": "skadnetwork", "code": "200"}, total)
        self.counter("postback_http_requests_total", {"route": "skadnetwork", "code": "500"}, lanes["five_hundreds"])
        self.counter("postback_storage_errors_total", {"spool": "postbacks"}, lanes["storage_errors"])
        self.counter("postback_forward_dead_lettered_total", {"destination": "partner"}, lanes["dead"])
        self.gauge("up", {}, lanes["up"])
        self.gauge("postback_ready", {}, lanes["ready"])
        self.gauge("postback_storage_healthy", {"spool": "postbacks"}, lanes["storage_healthy"])
        self.gauge("postback_data_available_bytes", {}, lanes["available"])
        self.gauge("postback_data_size_bytes", {}, [100e9] * self.steps)
        self.gauge("postback_delivery_oldest_pending_seconds", {"destination": "bucket"}, lanes["oldest_pending"])
        self.gauge("postback_delivery_destination_up", {"destination": "bucket"}, [1] * self.steps)
        self.gauge("postback_delivery_damaged_segments", {"destination": "bucket"}, lanes["damaged"])
        self.gauge("postback_forward_lag_seconds", {"destination": "partner"}, lanes["forward_lag"])
        self.gauge("postback_forward_destination_up", {"destination": "partner"}, [1] * self.steps)

    def increments_of(self, network):
        return self._increments[network]

    def counter(self, name, labels, increments):
        if name == "postback_network_postbacks_total":
            self.__dict__.setdefault("_increments", {})[labels["ad_network"]] = increments
        running, values = 0, []
        for x in increments:
            running += x
            values.append(running)
        self.series[series_name(name, labels)] = values

    def gauge(self, name, labels, values):
        self.series[series_name(name, labels)] = values

    def input_series(self):
        def text(v):
            return str(int(v)) if float(v).is_integer() else repr(float(v))

        return [{"series": s, "values": " ".join(text(v) for v in values)} for s, values in self.series.items()]


class Fault:
    """One failure injected from the fault step on; `alerts` lists what must fire, by when (and
    nothing else may fire, before or after)."""

    def __init__(self, name, alerts, traffic=None, other=None):
        self.name = name
        self.alerts = alerts  # [(alertname, labels, minutes after the fault by which it fires)]
        self._traffic = traffic
        self._other = other

    def traffic(self, network, count, copies, shares):
        return self._traffic(network, count, copies, shares) if self._traffic else (count, copies, shares)

    def other(self, start, lanes):
        if self._other:
            self._other(start, lanes)


def from_step(start, values, make):
    for i in range(start, len(values)):
        values[i] = make(i - start, values[i])


def faults():
    def silence(which):
        return lambda network, count, copies, shares: (0, 0, shares) if network == which else (count, copies, shares)

    def no_developer_copies(network, count, copies, shares):
        return count, 0, shares

    def only_developer_copies(network, count, copies, shares):
        return (0, copies, shares) if network == "big.skadnetwork" else (count, copies, shares)

    def zeroes(network, count, copies, shares):
        if network != "big.skadnetwork":
            return count, copies, shares
        return count, copies, {"null": 0.22, "coarse": 0.30, "fine": 0.02, "fine-zero": 0.46}

    def nulls(network, count, copies, shares):
        if network != "big.skadnetwork":
            return count, copies, shares
        return count, copies, {"null": 0.70, "coarse": 0.10, "fine": 0.18, "fine-zero": 0.02}

    def storage(start, s):
        from_step(start, s["storage_healthy"], lambda i, v: 0)
        from_step(start, s["storage_errors"], lambda i, v: 3)
        from_step(start, s["five_hundreds"], lambda i, v: 40)
        from_step(start, s["ready"], lambda i, v: 0)

    def down(start, s):
        from_step(start, s["up"], lambda i, v: 0)

    def forgeries(start, s):
        from_step(start, s["forged"], lambda i, v: 60)

    def quarantine(start, s):
        from_step(start, s["quarantined"], lambda i, v: 5)

    def shipping(start, s):
        from_step(start, s["oldest_pending"], lambda i, v: 60.0 * STEP_MINUTES * (i + 1))
        from_step(start, s["damaged"], lambda i, v: 1)

    def forwarding(start, s):
        from_step(start, s["forward_lag"], lambda i, v: 60.0 * STEP_MINUTES * (i + 1))
        from_step(start, s["dead"], lambda i, v: 1 if i == 3 else 0)

    def disk(start, s):
        # From 40% free to 0 over two days: below 25% with a day to go, then below 10%.
        from_step(start, s["available"], lambda i, v: max(0.0, 0.4 * 100e9 * (1 - i / (2 * STEPS_PER_DAY))))

    big, medium, small = (n for n, *_ in NETWORKS)
    net = lambda n: {"ad_network": n}  # noqa: E731
    inst = {"instance": "receiver-1"}
    return [
        Fault("quiet-big", [("PostbackNetworkQuiet", net(big), 2 * 60 + 45)], traffic=silence(big)),
        Fault("quiet-medium", [("PostbackNetworkQuiet", net(medium), 12 * 60 + 45)], traffic=silence(medium)),
        # Six a day: too few to tell silence from chance, so it must stay silent for the days after.
        Fault("quiet-small", [], traffic=silence(small)),
        Fault("developer-copies", [("PostbackDeveloperCopiesStopped", net(big), 13 * 60)], traffic=no_developer_copies),
        Fault(
            "network-copies",
            [("PostbackNetworkCopiesStopped", net(big), 13 * 60)],
            traffic=only_developer_copies,
        ),
        Fault("zero-values", [("PostbackZeroValuesJumped", net(big), 6 * 60)], traffic=zeroes),
        Fault("null-values", [("PostbackNullValuesJumped", net(big), 6 * 60)], traffic=nulls),
        Fault(
            "storage",
            [("PostbackStorageFailing", inst, 10), ("PostbackReceiverNotReady", inst, 30)],
            other=storage,
        ),
        Fault("down", [("PostbackReceiverDown", inst, 15)], other=down),
        Fault("forgeries", [("PostbackForgeriesRising", {}, 90)], other=forgeries),
        Fault("quarantine", [("PostbackQuarantineGrowing", dict(inst, reason="unknown-version"), 90)], other=quarantine),
        Fault(
            "shipping",
            [
                ("PostbackShippingBacklog", dict(inst, destination="bucket"), 80),
                ("PostbackShippingDamagedSegments", dict(inst, destination="bucket"), 10),
            ],
            other=shipping,
        ),
        Fault(
            "forwarding",
            [
                ("PostbackForwardingBacklog", dict(inst, destination="partner"), 80),
                ("PostbackForwardDeadLetters", dict(inst, destination="partner"), 60),
            ],
            other=forwarding,
        ),
        Fault("disk", [("PostbackDiskFillingUp", inst, 25 * 60)], other=disk),
    ]


def rules_by_name(rules_file):
    doc = yaml.safe_load(Path(rules_file).read_text())
    return {r["alert"]: r for g in doc["groups"] for r in g["rules"] if "alert" in r}


def render(template, labels):
    for key, value in labels.items():
        template = template.replace("{{ $labels.%s }}" % key, str(value))
    if "{{" in template:
        raise SystemExit(f"alert_rules_test: template left unrendered: {template!r}")
    return template


def expected(rule, labels):
    """The labels and annotations promtool reports for a firing alert with these labels."""
    merged = dict(JOB, **labels)
    merged = {k: v for k, v in merged.items() if v is not None}
    # Rules that sum over instances (per ad network, or the forgery rate) keep only `job`.
    if "ad_network" in merged or rule["alert"] == "PostbackForgeriesRising":
        merged.pop("instance", None)
    exp_labels = dict(merged, **rule.get("labels", {}))
    exp_annotations = {k: render(v, merged) for k, v in rule.get("annotations", {}).items()}
    return {"exp_labels": exp_labels, "exp_annotations": exp_annotations}


def duration(minutes):
    return f"{int(minutes)}m"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("rules")
    parser.add_argument("out")
    parser.add_argument("--days", type=int, default=12, help="days of normal traffic before a fault (at least 9)")
    parser.add_argument("--seed", type=int, default=20261206)
    args = parser.parse_args()
    if args.days < 9:
        raise SystemExit("alert_rules_test: --days must be at least 9 (the rules compare with a week ago)")
    rules = rules_by_name(args.rules)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rules_path = str(Path(args.rules).resolve())
    fault_day = args.days
    fault_step = fault_day * STEPS_PER_DAY
    after_days = 2
    end_minutes = (fault_day + after_days) * 24 * 60 - STEP_MINUTES

    def no_alerts(at_minutes, over_minutes, except_names=()):
        """No alert was pending or firing at any evaluation in the `over_minutes` before `at_minutes`."""
        matcher = "{alertname!~\"%s\"}" % "|".join(except_names) if except_names else ""
        return {"expr": f"count_over_time(ALERTS{matcher}[{duration(over_minutes)}])", "eval_time": duration(at_minutes), "exp_samples": []}

    def test_file(name, traffic, alert_tests, silence_tests):
        document = {
            "rule_files": [rules_path],
            "evaluation_interval": f"{STEP_MINUTES}m",
            "tests": [
                {
                    "name": name,
                    "interval": f"{STEP_MINUTES}m",
                    "input_series": traffic.input_series(),
                    "alert_rule_test": alert_tests,
                    "promql_expr_test": silence_tests,
                }
            ],
        }
        path = out / f"{name}.test.yml"
        path.write_text(json.dumps(document))
        return path

    written = []
    normal = Traffic(fault_day + after_days, args.seed)
    written.append(test_file("normal", normal, [], [no_alerts(end_minutes, end_minutes)]))
    covered = set()
    for fault in faults():
        traffic = Traffic(fault_day + after_days, args.seed, fault_step=fault_step, fault=fault)
        fault_minutes = fault_day * 24 * 60
        firing = []
        for alertname, labels, minutes in fault.alerts:
            covered.add(alertname)
            firing.append({"eval_time": duration(fault_minutes + minutes), "alertname": alertname, "exp_alerts": [expected(rules[alertname], labels)]})
        silence = [
            no_alerts(fault_minutes - STEP_MINUTES, fault_minutes - STEP_MINUTES),
            no_alerts(end_minutes, end_minutes, except_names=[name for name, _, _ in fault.alerts]),
        ]
        written.append(test_file(fault.name, traffic, firing, silence))
    missing = sorted(set(rules) - covered)
    if missing:
        raise SystemExit(f"alert_rules_test: no fault case makes these alerts fire: {', '.join(missing)}")
    print("\n".join(str(p) for p in written))


if __name__ == "__main__":
    sys.exit(main())
