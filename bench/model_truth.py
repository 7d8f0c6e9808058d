#!/usr/bin/env python3
"""Ground truth for the null-value model: a synthetic month of production postbacks where the value
every withheld (null) postback would have had is known.

    scripts/venv-python bench/model_truth.py --data DIR --schemas DIR --truth FILE
        [--from 2026-01-01] [--days 30] [--per-day 3000] [--campaigns 160] [--seed 1]

Writes a spool that `postback aggregate` reads (DIR/raw/postbacks/dt=…/part-rx1-000001.jsonl, records
as the receiver stores them, status verified, environment production, placeholder signatures as in
`postback aggregate synthesize`: aggregation trusts the spool's verdicts), a conversion schema per app
(fine values 0–63 worth 0–63 currency units; coarse low/medium/high), and the truth: one CSV row per
(dt, app_id, ad_network_id, source_identifier, postback_sequence_index, conversion_type, currency),
conversion_type `install` or `re-engagement` as the model's strata count them (and campaign_id: a
SKAdNetwork ≤ 3.0 postback's, which has no source identifier; empty for the others), with

    postbacks           winning postbacks of that key (the ones with a value and the null ones)
    null_postbacks      of them, those Apple withheld the value of
    true_null_revenue   what the null ones were worth (the revenue estimate of the value they would
                        have carried: the fine value in the first window, the coarse one in later windows)
    true_revenue        what all of them were worth: the decoded estimate of the measured ones plus
                        true_null_revenue (so true_revenue - true_null_revenue is the published
                        revenue_est_sum of those rows)
    expected_null_revenue  what the null ones were worth in expectation: for each, the mean of the
                        value it would have carried under its campaign's, window's and conversion type's
                        parameters (the exact distribution draw_fine samples from), so
                        true_null_revenue - expected_null_revenue is luck no model can know

How the month is made (deterministic for a seed):
- apps (three with a schema, USD, USD and EUR, one without), three ad networks, each app buying from
  two or three; `--campaigns` four-digit source identifiers (placement, geo, two campaign digits), spread
  over the app × network pairs, their daily volume Zipf-like (exponent 1.1) over the shuffled list;
- each campaign has a purchase rate and a price level (app × network × campaign × variant factors, so
  values differ between campaigns, networks and apps), rising prices and falling rates in later windows;
- per arrival day, Poisson installs per campaign; 60% SKAdNetwork 4.0, 30% AdAttributionKit (5% of
  those re-engagements), 10% SKAdNetwork 3.0; 5% non-winning; second and third windows for half and a
  third of the 4.0/AAK installs;
- Apple's crowd-anonymity tiers (SKAdNetwork 4.0, https://developer.apple.com/documentation/storekit/receiving-postbacks-in-multiple-conversion-windows
  and docs/postback-spec.md §5), from the day's crowd of each source-identifier prefix (4, 3 and 2 trailing
  digits: thresholds 15, 40, 120 postbacks a day for tiers 1, 2, 3; the highest tier wins, the most digits on
  a tie; tiers 0 and 1 always 2 digits): first window tier 0 → no value, tier 1 → coarse, tiers 2–3 →
  fine; later windows tier 0 → not sent, else 2 digits and coarse (5% without one: the app set no coarse
  value in that window); SKAdNetwork 3.0 → the value withheld below 40 postbacks a day of the campaign.
"""

import argparse
import csv
import datetime
import json
import math
import os
import random
import uuid

APPS = [  # app_id, currency (None: no schema)
    (700000001, "USD"),
    (700000002, "USD"),
    (700000003, "EUR"),
    (700000004, None),
]
NETWORKS = ["alpha.skadnetwork", "beta.skadnetwork", "gamma.skadnetwork"]
TIER_THRESHOLDS = (15, 40, 120)         # postbacks a day of a source-identifier prefix for tiers 1, 2, 3
SKAN3_THRESHOLD = 40                   # SKAdNetwork 3.0: value withheld below this many a day
COARSE = {"low": 0, "medium": 8, "high": 23}   # the coarse estimates: about the mean fine value of each
WINDOW_RATE = (1.0, 0.6, 0.4)          # purchase rate by window, times the campaign's
WINDOW_PRICE = (1.0, 1.3, 1.6)         # price level by window, times the campaign's
WINDOW_SENT = (1.0, 0.5, 0.33)         # share of installs with a postback in that window


def coarse_of(fine):
    return "low" if fine == 0 else "medium" if fine <= 15 else "high"


def schema(app_id, currency):
    """Fine value f is worth exactly f; coarse low 0, medium 1–15 (estimate 8), high 16–63 (estimate 23)."""
    entries = [{"value": f, "label": f"rev_{f}", "revenue": {"min": f, "max": f, "estimate": f}} for f in range(64)]
    coarse = {
        "low": {"label": "no_purchase", "revenue": {"min": 0, "max": 0, "estimate": 0}},
        "medium": {"label": "payer", "revenue": {"min": 1, "max": 15, "estimate": COARSE["medium"]}},
        "high": {"label": "big_payer", "revenue": {"min": 16, "max": 63, "estimate": COARSE["high"]}},
    }
    return {
        "schema_id": f"model-truth-{app_id}/2025-01-01", "app_id": app_id, "effective_from": "2025-01-01",
        "effective_to": None, "currency": currency,
        "applies_to": {"protocols": ["skadnetwork", "adattributionkit"],
                       "conversion_types": ["download", "redownload", "re-engagement"]},
        "windows": {"0": {"fine": {"entries": entries}, "coarse": coarse},
                    "1": {"coarse": {"inherit": "0"}}, "2": {"coarse": {"inherit": "0"}}},
    }


class Campaign:
    def __init__(self, app, currency, network, sid, weight, rate, price):
        self.app, self.currency, self.network, self.sid = app, currency, network, sid
        self.weight, self.rate, self.price = weight, rate, price


def make_campaigns(rng, count):
    pairs = []
    for index, (app, currency) in enumerate(APPS):
        bought = [NETWORKS[(index + k) % 3] for k in range(3 if index % 2 == 0 else 2)]
        pairs += [(app, currency, network) for network in bought]
    app_rate = {app: rng.uniform(0.07, 0.15) for app, _ in APPS}
    app_price = {app: rng.uniform(6, 12) for app, _ in APPS}
    net_rate = {n: rng.uniform(0.7, 1.4) for n in NETWORKS}
    net_price = {n: rng.uniform(0.8, 1.25) for n in NETWORKS}
    campaigns = []
    per_pair = max(1, count // len(pairs))
    for app, currency, network in pairs:
        used = set()
        number = 0
        while number < per_pair:
            two = rng.randrange(10, 100)
            if two in used:
                continue
            used.add(two)
            group_rate, group_price = math.exp(rng.gauss(0, 0.35)), math.exp(rng.gauss(0, 0.25))
            variants = min(per_pair - number, rng.choice((1, 2, 3, 4)))
            for variant in range(variants):
                sid = f"{1 + variant % 2}{1 + variant // 2}{two}"
                rate = min(0.6, app_rate[app] * net_rate[network] * group_rate * math.exp(rng.gauss(0, 0.15)))
                price = app_price[app] * net_price[network] * group_price * math.exp(rng.gauss(0, 0.1))
                campaigns.append(Campaign(app, currency, network, sid, 0.0, rate, price))
            number += variants
    order = list(range(len(campaigns)))
    rng.shuffle(order)
    total = sum(1 / (rank + 1) ** 1.1 for rank in range(len(campaigns)))
    for rank, index in enumerate(order):
        campaigns[index].weight = (1 / (rank + 1) ** 1.1) / total
    return campaigns


def poisson(rng, mean):
    if mean > 50:
        return max(0, int(round(rng.gauss(mean, math.sqrt(mean)))))
    limit, k, product = math.exp(-mean), 0, rng.random()
    while product > limit:
        k += 1
        product *= rng.random()
    return k


def tier_of(count):
    return sum(1 for threshold in TIER_THRESHOLDS if count >= threshold)


def tiers_for_day(counts):
    """(app, network, sid) -> (tier, digits) from the day's crowd of each prefix."""
    prefix = {}
    for (app, network, sid), n in counts.items():
        for digits in (4, 3, 2):
            key = (app, network, sid[-digits:])
            prefix[key] = prefix.get(key, 0) + n
    result = {}
    for (app, network, sid) in counts:
        best = max((tier_of(prefix[(app, network, sid[-d:])]), d) for d in (4, 3, 2))
        tier, digits = best
        result[(app, network, sid)] = (tier, digits if tier >= 2 else 2)
    return result


def record(rng, day, attribution, key_name):
    moment = datetime.datetime.combine(day, datetime.time()) + datetime.timedelta(microseconds=rng.randrange(86_400_000_000))
    aak = attribution["protocol"] == "adattributionkit"
    uid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    dedup = (uid.upper() if aak else uid) + f":{attribution['postback_sequence_index']}"
    body = json.dumps({"placeholder": "synthetic postback for bench/model", "transaction-id": uid}, separators=(",", ":"))
    return moment, {
        "format": 2, "received_at": moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), "writer": "rx1",
        "route": "appattribution-developer-copy" if aak else "skadnetwork-developer-copy", "status": "verified",
        "environment": "production", "dedup_key": dedup, "protocol": attribution["protocol"],
        "version": attribution["version"], "key": key_name, "attribution": attribution, "body": body,
    }


def attribution(campaign, protocol, version, window, won, ctype, sid, campaign_id, fine, coarse):
    return {
        "protocol": protocol, "version": version, "app_id": campaign.app, "ad_network_id": campaign.network,
        "campaign_id": campaign_id, "source_identifier": sid, "source_app_id": None, "source_domain": None,
        "marketplace_id": "com.apple.AppStore" if protocol == "adattributionkit" else None, "country_code": None,
        "interaction": "click", "conversion_type": ctype, "postback_sequence_index": window, "did_win": won,
        "fine_value": fine, "coarse_value": coarse, "test_mode": False if protocol == "skadnetwork" else None,
    }


def draw_fine(rng, campaign, window, reengagement):
    rate = campaign.rate * WINDOW_RATE[window] * (1.5 if reengagement else 1)
    if rng.random() >= rate:
        return 0
    amount = campaign.price * WINDOW_PRICE[window] * (0.8 if reengagement else 1) * math.exp(rng.gauss(0, 0.6))
    return max(1, min(63, int(round(amount))))


def normal_cdf(x):
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def fine_distribution(campaign, window, reengagement):
    """P(fine = j), j = 0…63, of the value draw_fine draws: 0 without a purchase, else the rounded
    log-normal amount clipped to 1…63."""
    rate = min(1.0, campaign.rate * WINDOW_RATE[window] * (1.5 if reengagement else 1))
    scale = campaign.price * WINDOW_PRICE[window] * (0.8 if reengagement else 1)

    def below(x):   # P(amount < x)
        return normal_cdf(math.log(x / scale) / 0.6)

    result = [1 - rate] + [0.0] * 63
    for j in range(1, 64):
        low = below(j - 0.5) if j > 1 else 0.0
        high = below(j + 0.5) if j < 63 else 1.0
        result[j] = rate * (high - low)
    return result


def expected_worth(cache, campaign, window, reengagement):
    """(mean fine value, mean coarse estimate) of a postback of this campaign, window and type."""
    key = (id(campaign), window, reengagement)
    if key not in cache:
        p = fine_distribution(campaign, window, reengagement)
        cache[key] = (sum(j * p[j] for j in range(64)), sum(COARSE[coarse_of(j)] * p[j] for j in range(64)))
    return cache[key]


def generate(args):
    rng = random.Random(args.seed)
    campaigns = make_campaigns(rng, args.campaigns)
    first = datetime.date.fromisoformat(args.start)
    truth = {}
    expectations = {}
    os.makedirs(args.schemas, exist_ok=True)
    for app, currency in APPS:
        if currency:
            os.makedirs(f"{args.schemas}/{app}", exist_ok=True)
            with open(f"{args.schemas}/{app}/2025-01-01.json", "w") as file:
                json.dump(schema(app, currency), file, indent=1)
    lines_written = 0
    for offset in range(args.days):
        day = first + datetime.timedelta(days=offset)
        day_rng = random.Random(f"{args.seed}/{day}")
        installs = {}
        for campaign in campaigns:
            installs[campaign] = poisson(day_rng, args.per_day * campaign.weight)
        counts = {}
        for campaign, n in installs.items():
            key = (campaign.app, campaign.network, campaign.sid)
            counts[key] = counts.get(key, 0) + n
        tiers = tiers_for_day(counts)
        records = []

        def add_truth(campaign, sid, campaign_id, window, ctype, null, value, coarse=False):
            if campaign.currency is None:
                return
            key = (day.isoformat(), campaign.app, campaign.network, sid or "", "" if campaign_id is None else campaign_id,
                   window, "re-engagement" if ctype == "re-engagement" else "install", campaign.currency)
            entry = truth.setdefault(key, [0, 0, 0, 0, 0.0])
            entry[0] += 1
            entry[1] += 1 if null else 0
            entry[2] += value if null else 0
            entry[3] += value
            if null:
                entry[4] += expected_worth(expectations, campaign, window, ctype == "re-engagement")[1 if coarse else 0]

        for campaign in campaigns:
            tier, digits = tiers[(campaign.app, campaign.network, campaign.sid)]
            for _ in range(installs[campaign]):
                kind = day_rng.random()
                protocol, version = ("skadnetwork", "3.0") if kind < 0.1 else ("adattributionkit", None) if kind < 0.4 else ("skadnetwork", "4.0")
                key_name = "apple-cas-identifier/0" if protocol == "adattributionkit" else "apple-skadnetwork-p256"
                reengagement = protocol == "adattributionkit" and day_rng.random() < 0.05
                ctype = "re-engagement" if reengagement else "redownload" if day_rng.random() < 0.1 else "download"
                if day_rng.random() < 0.05 and not reengagement:   # a non-winning postback: never a value
                    sid = None if version == "3.0" else campaign.sid[-2:]
                    attr = attribution(campaign, protocol, version, 0, False, ctype, sid,
                                       int(campaign.sid[-2:]) if version == "3.0" else None, None, None)
                    records.append(record(day_rng, day, attr, key_name))
                    continue
                fine = draw_fine(day_rng, campaign, 0, reengagement)
                if version == "3.0":
                    null = installs[campaign] < SKAN3_THRESHOLD
                    attr = attribution(campaign, protocol, version, 0, True, ctype, None, int(campaign.sid[-2:]),
                                       None if null else fine, None)
                    records.append(record(day_rng, day, attr, key_name))
                    add_truth(campaign, None, int(campaign.sid[-2:]), 0, ctype, null, fine)
                    continue
                sid = campaign.sid[-digits:]
                if tier == 0:
                    value = (None, None)
                elif tier == 1:
                    value = (None, coarse_of(fine))
                else:
                    value = (fine, None)
                attr = attribution(campaign, protocol, version, 0, True, ctype, sid, None, *value)
                records.append(record(day_rng, day, attr, key_name))
                measured = fine if value[0] is not None else COARSE[value[1]] if value[1] else fine
                add_truth(campaign, sid, None, 0, ctype, tier == 0, measured)
                for window in (1, 2):
                    if day_rng.random() >= WINDOW_SENT[window] or tier == 0:
                        continue
                    later = coarse_of(draw_fine(day_rng, campaign, window, reengagement))
                    null = day_rng.random() < 0.05
                    attr = attribution(campaign, protocol, version, window, True, ctype, campaign.sid[-2:], None,
                                       None, None if null else later)
                    records.append(record(day_rng, day, attr, key_name))
                    add_truth(campaign, campaign.sid[-2:], None, window, ctype, null, COARSE[later], coarse=True)
        records.sort(key=lambda pair: pair[0])
        directory = f"{args.data}/raw/postbacks/dt={day.isoformat()}"
        os.makedirs(directory, exist_ok=True)
        with open(f"{directory}/part-rx1-000001.jsonl", "w") as file:
            for _, line in records:
                file.write(json.dumps(line, separators=(",", ":")) + "\n")
        lines_written += len(records)
    with open(args.truth, "w", newline="") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(["dt", "app_id", "ad_network_id", "source_identifier", "campaign_id", "postback_sequence_index",
                         "conversion_type", "currency", "postbacks", "null_postbacks", "true_null_revenue", "true_revenue",
                         "expected_null_revenue"])
        for key in sorted(truth, key=lambda key: tuple(str(part) for part in key)):
            *counts, expected = truth[key]
            writer.writerow([*key, *counts, repr(expected)])
    return lines_written, len(campaigns)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="the store to write (DATA/raw/postbacks)")
    parser.add_argument("--schemas", required=True, help="where to write the conversion schemas")
    parser.add_argument("--truth", required=True, help="the truth CSV to write")
    parser.add_argument("--from", dest="start", default="2026-01-01")
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--per-day", type=int, default=3000, help="installs a day over all campaigns (about)")
    parser.add_argument("--campaigns", type=int, default=160, help="four-digit source identifiers")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    lines, campaigns = generate(args)
    print(f"model truth: {lines} postbacks, {campaigns} campaigns, {args.days} days from {args.start} under {args.data}/raw")


if __name__ == "__main__":
    main()
