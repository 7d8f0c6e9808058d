"""Hand-computed checks of the null-value model's Python reference (bench/model_reference.py) and of
the truth's expected worth (bench/model_truth.py).

    scripts/venv-python bench/test_model_reference.py      # about 5 s; the last line: `N passed, N failed`

The expected figures below are worked out by hand from the contract (the docstring of
model_reference.py) for a stratum of one app, one network and three campaigns, never by the code.
"""

import datetime
import math
import os
import random
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_reference as reference  # noqa: E402
import model_truth as truth  # noqa: E402

DAY = datetime.date(2026, 1, 1)


def near(got, want, rel=0.0, abs_=0.0):
    assert abs(got - want) <= max(rel * abs(want), abs_), f"{got!r} is not {want!r} (rel {rel}, abs {abs_})"


def row(source, campaign_id, postbacks, value=None, nulls=0):
    return {"app_id": "1", "currency": "USD", "postback_sequence_index": "0", "conversion_type": "download",
            "ad_network_id": "n", "source_identifier": source, "campaign_id": campaign_id, "postbacks": str(postbacks),
            "null_cv_postbacks": str(nulls), "revenue_est_sum": "" if value is None else str(value * postbacks)}


# Campaign A (source 1111): 10 postbacks worth 0, 10 worth 10, 20 worth 5 → n 40, mean 5, s2 12.5, 10 zeros.
# Campaigns B and C (SKAdNetwork 3.0: no source identifier, campaign_id 7 and 8): 10 worth 2; 10 worth 0.
# The app: n 60, mean 220/60 = 11/3, s2 = 1540/60 - (11/3)² = 12.2222…, p0 = 20/60.
ROWS = [row("1111", "", 10, 0), row("1111", "", 10, 10), row("1111", "", 20, 5),
        row("", "7", 10, 2), row("", "8", 10, 0)]
S2_APP = 1540 / 60 - (11 / 3) ** 2


def modeled(null_row, model="null-eb-2", changes=None):
    reference.use(model, changes)
    try:
        rows = ROWS + [null_row]
        return reference.model_rows([null_row], reference.fit_day(DAY, {DAY: rows}))[0]
    finally:
        reference.use()


def test_v2_campaign_id_separates_skadnetwork_3_campaigns():
    # Campaigns A, B, C around the network's mean 11/3: Σ n (ybar - 11/3)² = 40(4/3)² + 10(5/3)² + 10(11/3)²
    # = 233.33…; minus (3 - 1)·s2; over 60 - (1600 + 100 + 100)/60 = 30.
    tau2 = (40 * (4 / 3) ** 2 + 10 * (5 / 3) ** 2 + 10 * (11 / 3) ** 2 - 2 * S2_APP) / 30
    shrink = S2_APP / (S2_APP + 10 * tau2)          # campaign C: mean 0, n 10
    mu_c = shrink * 11 / 3                          # one network: its mean is the app's
    got = modeled(row("", "8", 3, nulls=3))
    near(float(got["modeled_null_revenue_est"]), 3 * mu_c, abs_=1e-6)
    # null-eb-1 pools B and C into one campaign (mean 1): a different estimate.
    v1 = modeled(row("", "8", 3, nulls=3), "null-eb-1")
    assert abs(float(v1["modeled_null_revenue_est"]) - 3 * mu_c) > 0.1
    assert "modeled_null_log_p_zero" not in reference.COLUMNS_V1


def test_v2_own_variance_is_shrunk_toward_the_network():
    got = modeled(row("", "8", 3, nulls=3))
    # campaign C: s2 0 over 10 postbacks; the network's is the app's (one network: (60 s2 + 30 s2)/90).
    near(float(got["modeled_null_values_var"]), 3 * (10 * 0 + 30 * S2_APP) / 40, rel=1e-12)
    v1 = modeled(row("", "8", 3, nulls=3), "null-eb-1")
    near(float(v1["modeled_null_values_var"]), 3 * S2_APP, rel=1e-12)


def test_v2_zero_inflated_low_end():
    # p0: app 20/60, network (20 + 30/3)/90 = 1/3, campaign C (10 + 30/3)/40 = 1/2.
    three = modeled(row("", "8", 3, nulls=3))
    near(float(three["modeled_null_log_p_zero"]), 3 * math.log(0.5), rel=1e-12)
    assert three["modeled_null_revenue_low"] == "0"          # 1/8 >= 5%
    # campaign B has no zeros: p0 (0 + 30/3)/40 = 1/4.
    two = modeled(row("", "7", 2, nulls=2))
    near(float(two["modeled_null_log_p_zero"]), 2 * math.log(0.25), rel=1e-12)
    assert two["modeled_null_revenue_low"] == "0"            # 1/16 >= 5%
    three_b = modeled(row("", "7", 3, nulls=3))
    near(float(three_b["modeled_null_log_p_zero"]), 3 * math.log(0.25), rel=1e-12)
    assert float(three_b["modeled_null_revenue_low"]) > 0.1  # 1/64 < 5%: the gamma's 5% quantile
    # without the zero share (the other two changes alone) the same row keeps the gamma's low end.
    gamma_only = modeled(row("", "7", 2, nulls=2), changes=["campaign-id", "own-variance"])
    assert float(gamma_only["modeled_null_revenue_low"]) > 0.1


# Morris's variance (change morris-variance): campaigns of 10 postbacks each, 5 worth a - 1 and 5 worth a + 1
# (own s2 = 1), source identifiers 1000 + a·10, so that the hand-worked figures stay exact.
def spread_rows(network, means):
    rows = []
    for mean in means:
        source = str(1000 + round(mean * 10))
        for value in (mean - 1, mean + 1):
            rows.append(dict(row(source, "", 5, value), ad_network_id=network))
    return rows


def morris(rows, network, mean, nulls=2):
    null_row = dict(row(str(1000 + round(mean * 10)), "", nulls, nulls=nulls), ad_network_id=network)
    return reference.model_rows([null_row], reference.fit_day(DAY, {DAY: rows + [null_row]}))[0]


def test_v2_morris_variance_with_four_campaigns():
    # One network, campaigns of means 2, 4, 6, 8: the app n 40, mean 5, sigma2 = 1 + (9 + 1 + 1 + 9)/4 = 6.
    # tau2 = (10·20 - 3·6) / (40 - 400/40) = 182/30; K = 4. Campaign 8: B = 6 / (6 + 10·182/30) = 0.09,
    # V = (6/10)(1 - 3/4·0.09) + 2/(4 - 3)·0.09²·(8 - 5)² = 0.5595 + 0.1458 = 0.7053
    # (floor: sigma2_c = (10·1 + 30·6)/40 = 4.75, 4.75/10 = 0.475, below it).
    got = morris(spread_rows("n", (2, 4, 6, 8)), "n", 8)
    near(float(got["modeled_null_mean_sd"]), 2 * math.sqrt(0.7053), rel=1e-9)
    near(float(got["modeled_null_revenue_est"]), 2 * (0.91 * 8 + 0.09 * 5), abs_=1e-6)   # the mean is unchanged
    near(float(got["modeled_null_values_var"]), 2 * 4.75, rel=1e-12)
    # without the change: B·tau2 + B²·V_network = 0.09·182/30 + 0.0081·6/40.
    old = modeled_with(spread_rows("n", (2, 4, 6, 8)), "n", 8, ["campaign-id", "own-variance", "zero-inflated"])
    near(float(old["modeled_null_mean_sd"]), 2 * math.sqrt(0.09 * 182 / 30 + 0.0081 * 6 / 40), rel=1e-9)


def test_v2_morris_variance_without_between_variance_and_the_floor():
    # Means 4.8, 4.9, 5.1, 5.2: the app n 40, mean 5, sigma2 = 1 + 0.1/4 = 1.025; Σ n (ybar - 5)² = 1.0 < 3·1.025,
    # so tau2 = 0 with K = 4: mu = the network's 5, V = sigma2/(n·K) + 2/(K - 3)·(ybar - 5)².
    rows = spread_rows("n", (4.8, 4.9, 5.1, 5.2))
    got = morris(rows, "n", 5.2)
    near(float(got["modeled_null_revenue_est"]), 2 * 5, abs_=1e-6)
    near(float(got["modeled_null_mean_sd"]), 2 * math.sqrt(1.025 / 40 + 2 * 0.2 ** 2), rel=1e-9)   # 0.105625
    # Campaign 4.9: V = 1.025/40 + 2·0.01 = 0.045625, below the floor sigma2_c / n_c = ((10·1 + 30·1.025)/40)/10.
    got = morris(rows, "n", 4.9)
    near(float(got["modeled_null_mean_sd"]), 2 * math.sqrt((10 + 30 * 1.025) / 40 / 10), rel=1e-9)


def test_v2_morris_variance_borrowing_the_pooled_between_variance():
    # Network n: campaigns 2, 4, 6, 8; network m: one campaign of mean 5. The app: n 50, mean 5,
    # sigma2 = 1 + 200/50 = 5. Two networks (K = 2 < 4): both take the app's mu 5, V = 5/50 (tau2_net = 0).
    # m's campaign borrows the pooled tau2 = (200 - 3·5)/30 = 185/30 with K = 5 (the stratum's campaigns):
    # B = 5 / (5 + 10·185/30) = 0.075, V = (5/10)(1 - 4/5·0.075) + 2/2·B²·0 = 0.47 (floor 3.25/10 below it).
    rows = spread_rows("n", (2, 4, 6, 8)) + spread_rows("m", (5,))
    got = morris(rows, "m", 5)
    near(float(got["modeled_null_mean_sd"]), 2 * math.sqrt(0.47), rel=1e-9)
    near(float(got["modeled_null_values_var"]), 2 * 3.25, rel=1e-12)


def test_v2_morris_variance_needs_four_campaigns():
    # Campaign C of ROWS (K = 3): null-eb-1's V = B·tau2 + B²·V_network (one network: the app's S2_APP/60),
    # 1.048, above its floor (30·S2_APP/40)/10 = 0.917.
    tau2 = (40 * (4 / 3) ** 2 + 10 * (5 / 3) ** 2 + 10 * (11 / 3) ** 2 - 2 * S2_APP) / 30
    shrink = S2_APP / (S2_APP + 10 * tau2)
    got = modeled(row("", "8", 3, nulls=3))
    near(float(got["modeled_null_mean_sd"]), 3 * math.sqrt(shrink * tau2 + shrink ** 2 * S2_APP / 60), rel=1e-9)


def modeled_with(rows, network, mean, changes):
    reference.use(changes=changes)
    try:
        return morris(rows, network, mean)
    finally:
        reference.use()


def test_ablation_changes_alone():
    only_zero = modeled(row("", "8", 3, nulls=3), changes=["zero-inflated"])
    near(float(only_zero["modeled_null_values_var"]), 3 * S2_APP, rel=1e-12)
    assert only_zero["modeled_null_log_p_zero"] != "0"
    nothing = modeled(row("", "8", 3, nulls=3), changes=[])
    assert nothing["modeled_null_log_p_zero"] == ""   # an ablation without the zero share: no low-end rule
    try:
        reference.use(changes=["no-such-change"])
    except ValueError:
        pass
    else:
        raise AssertionError("an unknown change was accepted")
    finally:
        reference.use()


def test_expected_worth_matches_the_sampler():
    """fine_distribution (the truth's expectation) against 200,000 draws of draw_fine itself."""
    campaign = truth.Campaign(1, "USD", "n", "1111", 0.0, 0.3, 9.0)
    for window, reengagement in ((0, False), (2, True)):
        rng = random.Random(5)
        draws = [truth.draw_fine(rng, campaign, window, reengagement) for _ in range(200_000)]
        fine, coarse = truth.expected_worth({}, campaign, window, reengagement)
        mean = sum(draws) / len(draws)
        sd = math.sqrt(sum((d - mean) ** 2 for d in draws) / len(draws) / len(draws))
        assert abs(mean - fine) < 4 * sd
        coarse_mean = sum(truth.COARSE[truth.coarse_of(d)] for d in draws) / len(draws)
        near(coarse_mean, coarse, rel=0.02)


def main():
    passed, failed = 0, 0
    for name, test in sorted((n, f) for n, f in globals().items() if n.startswith("test_")):
        try:
            test()
            passed += 1
        except Exception:  # noqa: BLE001 — every failure is reported
            failed += 1
            print(f"FAILED {name}")
            traceback.print_exc()
    print(f"model reference: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
