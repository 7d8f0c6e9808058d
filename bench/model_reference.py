#!/usr/bin/env python3
"""An independent reference of the null-value model (`null-eb-2`; `--model null-eb-1` for the first
version), written only from its contract (docs/modeling.md), never from the Swift code; and the
comparison of what `postback aggregate` published with it.

    scripts/venv-python bench/model_reference.py --agg DATA/agg [--out FILE]   # the reference's columns
    scripts/venv-python bench/model_reference.py --agg DATA/agg --compare      # published == reference?
    ... [--model null-eb-1 | null-eb-2] [--changes campaign-id,own-variance,zero-inflated,morris-variance]

Input: the published `campaign_daily` CSV of every day under DATA/agg (read as text, exact decimals).
Output (--out): one CSV row per campaign_daily row (dt, its row number in the file, and the modeled
columns). --compare checks, for every row, that the published modeled columns equal the
reference's within 1e-6 relative (1e-6 absolute near zero) and that `modeled_note` is empty in the
same rows; it prints the first differences and exits 1 when any. --changes (an ablation, for the
benchmark only) applies only the listed changes of null-eb-2 to null-eb-1; the columns are null-eb-2's.

The model null-eb-1, as this reference reads the contract (its choices where the contract leaves room
are marked "choice"):
- measured units: production `campaign_daily` rows with a currency and a revenue_est_sum and
  m = postbacks - null_cv_postbacks > 0 measured postbacks, each worth v = revenue_est_sum / m (a row
  has one conversion value, so a measured row has no null postbacks and a null row no revenue);
- stratum (app_id, currency, window, conversion type): window = postback_sequence_index (choice: an
  empty one, SKAdNetwork ≤ 3.0's single postback, is window 0), conversion type `re-engagement`, else
  `install` (download and redownload); campaign = (ad_network_id, source_identifier);
- pooling: the measured rows of the published days D-27 … D;
- per unit n = Σ m, ybar = Σ m·v / n, s2 = Σ m·v² / n - ybar²;
- app: mu = ybar, sigma2 = s2 of the app (every measured postback of the stratum), V = sigma2 / n;
- between-unit variance, method of moments (the one-way ANOVA estimator, unbiased for unequal n):
      tau2 = max(0, (Σ_u n_u (ybar_u - ybar_parent)² - (K - 1)·sigma2) / (N - Σ_u n_u² / N))
  over the K ≥ 2 child units with data (N = Σ n_u; ybar_parent their pooled mean); fewer than 2: 0.
  Networks: around the app's mean. Campaigns: around their network's pooled mean; a network with
  fewer than 2 campaigns with data uses the pooled estimate over every network of the stratum
  (choice): tau2 = max(0, (Σ_net Σ_c n_c (ybar_c - ybar_net)² - Σ_net (K_net - 1)·sigma2)
  / Σ_net (N_net - Σ_c n_c² / N_net)), 0 when that denominator is 0;
- posterior (normal-normal): B = sigma2 / (sigma2 + n·tau2) (the share shrunk to the parent),
  mu = (1 - B)·ybar + B·mu_parent, V = B·tau2 + B²·V_parent; tau2 = 0 → the parent's mu and V; a
  unit without data → its parent's;
- a row with k null postbacks: est = k·mu_c, variance k·sigma2 + k²·V_c, interval the 5% and 95%
  quantiles of the gamma with that mean and variance (all 0 when est is 0; est itself when the
  variance is 0); values_var = k·sigma2, mean_sd = k·sqrt(V_c);
- rows without nulls in a modeled stratum: 0s; modeled_revenue_est = revenue_est_sum + est (empty
  when revenue_est_sum is empty and the row has no nulls);
- fewer than 30 measured postbacks in the stratum's pool: every row with a currency of that stratum
  that day gets empty modeled columns and a note (choice: also its rows without nulls); rows without
  a currency (no schema) are never modeled (every modeled column empty, no note).
- manifest: "model": {"name": "null-eb-1", "pooling_days": 28, "min_measured": 30, "interval": 0.9}.

The model null-eb-2: null-eb-1 with exactly these changes (everything not named here is as above):
1. campaign-id — the campaign unit is (ad_network_id, source_identifier, campaign_id), each as the
   row publishes it (text; empty is a value): SKAdNetwork ≤ 3.0 postbacks carry a campaign_id and no
   source_identifier, so their campaigns are no longer pooled into one per network.
2. own-variance — each campaign's individual values have their own variance, shrunk toward its
   network's and the network's toward the app's, with a prior weight of P = 30 postbacks:
       sigma2_app = s2_app   (the stratum's s2, as null-eb-1's sigma2)
       sigma2_net = (n_net·s2_net + P·sigma2_app) / (n_net + P)
       sigma2_c   = (n_c·s2_c + P·sigma2_net) / (n_c + P)
   (a unit without measured postbacks: n = 0, so its parent's). A null row's
   values_var = k·sigma2_c and its variance k·sigma2_c + k²·V_c. The mean's empirical Bayes (tau2,
   B, mu, V) is unchanged: it still uses the stratum's pooled sigma2.
3. zero-inflated — p0, the share of measured postbacks worth exactly 0 (z = the measured postbacks
   of rows whose v = 0, exactly), shrunk the same way:
       p0_app = z_app / n_app
       p0_net = (z_net + P·p0_app) / (n_net + P)
       p0_c   = (z_c + P·p0_net) / (n_c + P)
   A new DOUBLE column `modeled_null_log_p_zero`, appended after `modeled_null_mean_sd` and before
   `modeled_note`: k·ln(p0_c), the log of the chance that all k null postbacks are worth 0 under the
   model (independent postbacks). 0 on a modeled row without nulls (k = 0), empty on an unmodeled row.
   When p0_c = 0 (only when no measured postback of the stratum's pool is worth 0) ln(0) is written as
   k·ln(1e-300) = k·(-690.7755278982137): finite, and far below ln(0.05), which is all it is used for.
   The interval: low = 0 when log_p_zero ≥ ln(0.05), else the gamma's 5% quantile (as in null-eb-1);
   high = the gamma's 95% quantile. Aggregating rows: est, variance as in null-eb-1 (Σ values_var +
   Σ over (campaign, stratum) of (Σ mean_sd)²), and low = 0 when Σ log_p_zero ≥ ln(0.05), else the
   gamma's 5%.
   manifest: "model": {"name": "null-eb-2", "pooling_days": 28, "min_measured": 30, "interval": 0.9,
   "prior_postbacks": 30}.
4. morris-variance — the posterior variance of a shrunk unit (a network, shrunk toward the app; a
   campaign, toward its network) counts the uncertainty of tau2 and of the parent's mean (Morris 1983),
   and a campaign's variance has a floor. For a unit with n > 0 measured postbacks, ybar their mean,
   sigma2 the stratum's pooled one (null-eb-1's), (mu_parent, V_parent) its parent's posterior, and K:
     - a network: K = the stratum's networks with data (those whose tau2_net was estimated);
     - a campaign of a network with ≥ 2 campaigns with data: K = that network's campaigns with data;
     - a campaign of a network with < 2 campaigns with data (it borrows the pooled tau2): K = the
       stratum's campaigns with data (over every network);
   then
     - K < 4: null-eb-1's posterior, unchanged (tau2 > 0: B, mu, V = B·tau2 + B²·V_parent; tau2 = 0:
       the parent's mu and V);
     - K ≥ 4, tau2 > 0: B = sigma2 / (sigma2 + n·tau2), mu = (1 - B)·ybar + B·mu_parent (as before),
           V = (sigma2 / n)·(1 - (K - 1)/K·B) + 2/(K - 3)·B²·(ybar - mu_parent)²;
     - K ≥ 4, tau2 = 0: mu = mu_parent (as before) and V by the same formula with B = 1:
           V = sigma2 / (n·K) + 2/(K - 3)·(ybar - mu_parent)².
   (mu_parent is the parent's posterior mean, the one the unit is shrunk toward; V_parent is not used
   when K ≥ 4.) A unit without data keeps its parent's mu and V, as before.
   The floor, campaigns only: a campaign with n_c > 0 has V_c = max(V_c, sigma2_c / n_c), sigma2_c its
   own shrunk variance of change 2 (in an ablation without own-variance: the pooled sigma2). A network's
   V has no floor; a campaign without data takes its network's V (no floor).
   This V_c is the one in every use above: the row's variance k·sigma2_c + k²·V_c, mean_sd = k·sqrt(V_c),
   and through them the interval; mu (the estimate) is unchanged by this change.
"""

import argparse
import csv
import datetime
import decimal
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spark"))
import published_schema  # noqa: E402  (generated from Sources/AggregateSchema)

MODELS = {
    "null-eb-1": {"name": "null-eb-1", "pooling_days": 28, "min_measured": 30, "interval": 0.9},
    "null-eb-2": {"name": "null-eb-2", "pooling_days": 28, "min_measured": 30, "interval": 0.9, "prior_postbacks": 30},
}
CHANGES = {"null-eb-1": frozenset(),
           "null-eb-2": frozenset(("campaign-id", "own-variance", "zero-inflated", "morris-variance"))}
COLUMNS_V1 = ("modeled_null_revenue_est", "modeled_null_revenue_low", "modeled_null_revenue_high", "modeled_revenue_est",
              "modeled_null_values_var", "modeled_null_mean_sd", "modeled_note")
COLUMNS_V2 = COLUMNS_V1[:6] + ("modeled_null_log_p_zero", "modeled_note")
MICRO = decimal.Decimal("0.000001")
LOG_ZERO = math.log(1e-300)   # ln(p0_c) written when p0_c = 0
LOG_LOW = math.log(0.05)      # log_p_zero at or above this: the interval's low end is 0

MODEL, ACTIVE, COLUMNS = {}, frozenset(), ()


def use(name="null-eb-2", changes=None):
    """Selects the model this module computes: a version, or (changes, an ablation) null-eb-1 with only
    the listed changes of null-eb-2 (then null-eb-2's columns and manifest entry)."""
    global MODEL, ACTIVE, COLUMNS
    if changes is not None:
        unknown = set(changes) - CHANGES["null-eb-2"]
        if unknown:
            raise ValueError(f"unknown model changes: {', '.join(sorted(unknown))}")
        name = "null-eb-2"
    MODEL = dict(MODELS[name])
    ACTIVE = CHANGES[name] if changes is None else frozenset(changes)
    COLUMNS = COLUMNS_V1 if name == "null-eb-1" else COLUMNS_V2


use()


def gamma_interval(mean, variance, level=0.9):
    """The (5%, 95%) quantiles of the gamma with this mean and variance (method of moments)."""
    from scipy.stats import gamma

    if mean <= 0:
        return 0.0, 0.0
    if variance <= 0:
        return mean, mean
    shape, scale = mean * mean / variance, variance / mean
    tail = (1 - level) / 2
    return max(0.0, float(gamma.ppf(tail, shape, scale=scale))), float(gamma.ppf(1 - tail, shape, scale=scale))


def interval_low_high(mean, variance, log_p_zero=None):
    """The published interval: the gamma's, with the low end 0 when the chance of nothing is >= 5%."""
    low, high = gamma_interval(mean, variance)
    if log_p_zero is not None and log_p_zero >= LOG_LOW:
        low = 0.0
    return low, high


def money(value):
    """An amount (float or Decimal) as the decimal the tables publish (6 places, shortest form)."""
    exact = value if isinstance(value, decimal.Decimal) else decimal.Decimal(repr(value))
    text = format(exact.quantize(MICRO, rounding=decimal.ROUND_HALF_EVEN).normalize(), "f")
    return "0" if text in ("-0", "0E-6") else text


def stratum_of(row):
    window = row["postback_sequence_index"] or "0"
    kind = "re-engagement" if row["conversion_type"] == "re-engagement" else "install"
    return (row["app_id"], row["currency"], window, kind)


def measured(row):
    """(m, Σ m·v, Σ m·v², zero-valued postbacks) of a row, or None when it has no measured postbacks."""
    if not row["currency"] or not row["revenue_est_sum"]:
        return None
    m = int(row["postbacks"]) - int(row["null_cv_postbacks"] or 0)
    if m <= 0:
        return None
    total = decimal.Decimal(row["revenue_est_sum"])
    v = total / m
    return m, float(total), float(v * v * m), m if total == 0 else 0


class Sums:
    __slots__ = ("n", "s1", "s2", "z")

    def __init__(self):
        self.n, self.s1, self.s2, self.z = 0, 0.0, 0.0, 0

    def add(self, m, s1, s2, z):
        self.n += m
        self.s1 += s1
        self.s2 += s2
        self.z += z

    @property
    def mean(self):
        return self.s1 / self.n

    @property
    def variance(self):
        """s2 (population form), 0 without data."""
        return max(0.0, self.s2 / self.n - self.mean * self.mean) if self.n else 0.0


def shrunk(count, own_total, prior, weight):
    """(own_total + weight·prior) / (count + weight): a share or variance shrunk toward its parent's."""
    return (own_total + weight * prior) / (count + weight)


def between_variance(groups, sigma2):
    """tau2 over groups of (child Sums list, parent mean): the pooled one-way ANOVA estimator."""
    numerator, denominator = 0.0, 0.0
    for children, parent_mean in groups:
        children = [c for c in children if c.n > 0]
        if len(children) < 2:
            continue
        total = sum(c.n for c in children)
        numerator += sum(c.n * (c.mean - parent_mean) ** 2 for c in children) - (len(children) - 1) * sigma2
        denominator += total - sum(c.n * c.n for c in children) / total
    if denominator <= 0:
        return 0.0
    return max(0.0, numerator / denominator)


def posterior(unit, tau2, sigma2, parent_mu, parent_v, siblings=0):
    """(mu, V) of a unit shrunk toward its parent; siblings: K, the units with data behind tau2 (the
    Morris correction of null-eb-2's change morris-variance when K >= 4)."""
    if unit is None or unit.n == 0:
        return parent_mu, parent_v
    if "morris-variance" not in ACTIVE or siblings < 4:
        if tau2 <= 0:
            return parent_mu, parent_v
        shrink = sigma2 / (sigma2 + unit.n * tau2)
        return (1 - shrink) * unit.mean + shrink * parent_mu, shrink * tau2 + shrink * shrink * parent_v
    shrink = 1.0 if tau2 <= 0 else sigma2 / (sigma2 + unit.n * tau2)
    mu = parent_mu if tau2 <= 0 else (1 - shrink) * unit.mean + shrink * parent_mu
    k = siblings
    return mu, (sigma2 / unit.n) * (1 - (k - 1) / k * shrink) + 2 / (k - 3) * shrink * shrink * (unit.mean - parent_mu) ** 2


class StratumModel:
    """The fitted model of one stratum for one day: per campaign (mu, V, sigma2, p0), or a note."""

    def __init__(self, stratum, rows):
        self.stratum = stratum
        app = Sums()
        networks, campaigns = {}, {}
        for network, source, m, s1, s2, z in rows:
            app.add(m, s1, s2, z)
            networks.setdefault(network, Sums()).add(m, s1, s2, z)
            campaigns.setdefault((network, source), Sums()).add(m, s1, s2, z)
        self.measured = app.n
        self.note = None
        if app.n < MODEL["min_measured"]:
            self.note = (f"too little data: {app.n} measured postback{'' if app.n == 1 else 's'} for this app and window in "
                         f"{MODEL['pooling_days']} days ({MODEL['min_measured']} needed)")
            return
        mu_app = app.mean
        sigma2 = max(0.0, app.s2 / app.n - mu_app * mu_app)
        v_app = sigma2 / app.n
        self.sigma2 = sigma2
        tau2_net = between_variance([(list(networks.values()), mu_app)], sigma2)
        weight = MODEL.get("prior_postbacks", 0)
        own_variance, zero_inflated = "own-variance" in ACTIVE, "zero-inflated" in ACTIVE
        p0_app = app.z / app.n

        def spread(sums, parent_sigma2, parent_p0):
            """(sigma2, p0) of a unit: the pooled ones in null-eb-1, its own shrunk ones with the changes."""
            own = shrunk(sums.n, sums.n * sums.variance, parent_sigma2, weight) if own_variance else sigma2
            zero = shrunk(sums.n, sums.z, parent_p0, weight) if zero_inflated else None
            return own, zero

        self.networks = {network: posterior(sums, tau2_net, sigma2, mu_app, v_app, len(networks)) + spread(sums, sigma2, p0_app)
                         for network, sums in networks.items()}
        self.app = (mu_app, v_app, sigma2, p0_app if zero_inflated else None)
        by_network = {}
        for (network, source), sums in campaigns.items():
            by_network.setdefault(network, []).append(sums)
        pooled = between_variance([(children, networks[network].mean) for network, children in by_network.items()], sigma2)
        self.campaigns = {}
        tau2_of = {}
        for (network, source), sums in campaigns.items():
            children = by_network[network]
            if network not in tau2_of:
                # (tau2, K): the network's own over its campaigns, or the pooled one over the stratum's campaigns
                tau2_of[network] = ((between_variance([(children, networks[network].mean)], sigma2), len(children))
                                    if len(children) >= 2 else (pooled, len(campaigns)))
            parent = self.networks[network]
            tau2, siblings = tau2_of[network]
            mu, v = posterior(sums, tau2, sigma2, *parent[:2], siblings)
            own_sigma2, p0 = spread(sums, *parent[2:])
            if "morris-variance" in ACTIVE:
                v = max(v, own_sigma2 / sums.n)   # the floor: the campaign's own mean's sampling variance
            self.campaigns[(network, source)] = (mu, v, own_sigma2, p0)

    def campaign(self, network, source):
        """(mu, V, sigma2, p0 or None) of a campaign (source: campaign_unit's part after the network)."""
        if (network, source) in self.campaigns:
            return self.campaigns[(network, source)]
        return self.networks.get(network, self.app)


def campaign_unit(row):
    """A row's campaign within its network: the source identifier, and in null-eb-2 the campaign_id."""
    if "campaign-id" in ACTIVE:
        return (row["source_identifier"], row.get("campaign_id") or "")
    return row["source_identifier"]


def read_day(path):
    with open(path, newline="", encoding="utf-8") as file:
        return list(csv.DictReader(file))


def published_days(agg, table=published_schema.CAMPAIGN_DAILY):
    root = f"{agg}/{table}"
    days = []
    for name in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        if name.startswith("dt=") and os.path.exists(f"{root}/{name}/part-00000.csv"):
            days.append(datetime.date.fromisoformat(name[3:]))
    return days


def model_rows(rows, models):
    """The modeled columns (text, as published) of each row of one day."""
    out = []
    for row in rows:
        if not row["currency"]:
            out.append({c: "" for c in COLUMNS})
            continue
        model = models.get(stratum_of(row))
        if model is None or model.note:
            note = model.note if model else (f"too little data: 0 measured postbacks for this app and window in "
                                             f"{MODEL['pooling_days']} days ({MODEL['min_measured']} needed)")
            out.append(dict({c: "" for c in COLUMNS}, modeled_note=note))
            continue
        k = int(row["null_cv_postbacks"] or 0)
        if k == 0:
            revenue = row["revenue_est_sum"]
            out.append({"modeled_null_revenue_est": "0", "modeled_null_revenue_low": "0", "modeled_null_revenue_high": "0",
                        "modeled_revenue_est": revenue, "modeled_null_values_var": "0", "modeled_null_mean_sd": "0",
                        "modeled_null_log_p_zero": "0" if "zero-inflated" in ACTIVE else "", "modeled_note": ""})
            continue
        mu, v, sigma2, p0 = model.campaign(row["ad_network_id"], campaign_unit(row))
        est = k * mu
        values_var = k * sigma2
        variance = values_var + k * k * v
        log_p_zero = None if p0 is None else k * (math.log(p0) if p0 > 0 else LOG_ZERO)
        low, high = interval_low_high(est, variance, log_p_zero)
        est_text = money(est)
        total = decimal.Decimal(row["revenue_est_sum"] or "0") + decimal.Decimal(est_text)
        out.append({"modeled_null_revenue_est": est_text, "modeled_null_revenue_low": money(low),
                    "modeled_null_revenue_high": money(high), "modeled_revenue_est": money(total),
                    "modeled_null_values_var": repr(values_var), "modeled_null_mean_sd": repr(k * math.sqrt(v)),
                    "modeled_null_log_p_zero": "" if log_p_zero is None else repr(log_p_zero), "modeled_note": ""})
    return out


def fit_day(day, rows_by_day):
    """The models of every stratum for day D, from the measured rows of D-27 … D."""
    pool = {}
    for back in range(MODEL["pooling_days"]):
        for row in rows_by_day.get(day - datetime.timedelta(days=back), ()):
            unit = measured(row)
            if unit is not None:
                pool.setdefault(stratum_of(row), []).append((row["ad_network_id"], campaign_unit(row), *unit))
    return {stratum: StratumModel(stratum, rows) for stratum, rows in pool.items()}


def reference(agg):
    """{day: (published rows, reference columns)} for every published day under agg."""
    days = published_days(agg)
    rows_by_day = {day: read_day(f"{agg}/{published_schema.CAMPAIGN_DAILY}/dt={day.isoformat()}/part-00000.csv") for day in days}
    result = {}
    for day in days:
        models = fit_day(day, rows_by_day)
        result[day] = (rows_by_day[day], model_rows(rows_by_day[day], models))
    return result


def write_tables(agg, out, result=None):
    """The published campaign_daily rows with the reference's modeled columns (in place of published
    ones, if any), one file per day, so that the benchmark scores the reference like the published model.
    result: reference(agg), when already computed."""
    for day, (rows, expected) in (result or reference(agg)).items():
        directory = f"{out}/{published_schema.CAMPAIGN_DAILY}/dt={day.isoformat()}"
        os.makedirs(directory, exist_ok=True)
        with open(f"{directory}/part-00000.csv", "w", newline="", encoding="utf-8") as file:
            header = [c for c in (rows[0].keys() if rows else []) if c not in COLUMNS_V1 + COLUMNS_V2]
            writer = csv.writer(file, lineterminator="\n")
            writer.writerow(header + list(COLUMNS))
            for row, columns in zip(rows, expected):
                writer.writerow([row[c] for c in header] + [columns[c] for c in COLUMNS])


def close(published, expected, relative=1e-6, absolute=1e-6):
    if published == "" or expected == "":
        return published == expected
    a, b = float(published), float(expected)
    return abs(a - b) <= max(relative * max(abs(a), abs(b)), absolute)


def compare(agg, limit=20, result=None):
    """Published modeled columns against the reference: (rows compared, differences)."""
    differences, compared = [], 0
    for day, (rows, expected) in (result or reference(agg)).items():
        for number, (row, want) in enumerate(zip(rows, expected), start=2):
            compared += 1
            missing = [c for c in COLUMNS if c not in row]
            if missing:
                differences.append(f"{published_schema.CAMPAIGN_DAILY}/dt={day}: no column {', '.join(missing)} (the model is not published)")
                return compared, differences
            for column in COLUMNS:
                got = row[column]
                ok = (got == "") == (want[column] == "") if column == "modeled_note" else close(got, want[column])
                if not ok:
                    differences.append(f"{published_schema.CAMPAIGN_DAILY}/dt={day} line {number} ({row['app_id']} {row['ad_network_id']} "
                                       f"{row['source_identifier']!r} w{row['postback_sequence_index']}): {column} "
                                       f"published {got!r}, reference {want[column]!r}")
    return compared, differences


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agg", required=True, help="the published tables (DATA/agg)")
    parser.add_argument("--out", help="write the reference's modeled columns here (CSV)")
    parser.add_argument("--write", metavar="DIR",
                        help="write DIR/campaign_daily/dt=…/part-00000.csv: the published rows with the reference's columns")
    parser.add_argument("--compare", action="store_true", help="compare the published modeled columns with the reference")
    parser.add_argument("--model", choices=sorted(MODELS), default="null-eb-2", help="the model version (null-eb-2)")
    parser.add_argument("--changes", help="an ablation: null-eb-1 with only these changes of null-eb-2 (comma-separated: "
                        f"{', '.join(sorted(CHANGES['null-eb-2']))}; empty: none)")
    args = parser.parse_args()
    use(args.model, None if args.changes is None else [c for c in args.changes.split(",") if c])
    result = reference(args.agg)   # computed once for every output asked for
    if args.out:
        with open(args.out, "w", newline="") as file:
            writer = csv.writer(file, lineterminator="\n")
            writer.writerow(["dt", "line", *COLUMNS])
            for day, (_, expected) in result.items():
                for number, columns in enumerate(expected, start=2):
                    writer.writerow([day.isoformat(), number, *(columns[c] for c in COLUMNS)])
    if args.write:
        write_tables(args.agg, args.write, result)
    if args.compare:
        compared, differences = compare(args.agg, result=result)
        for line in differences[:20]:
            print(f"  {line}")
        print(f"model reference: {compared} campaign_daily rows compared, {len(differences)} differences")
        return 1 if differences else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
