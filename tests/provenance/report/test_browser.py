"""A real browser: Debian's headless chromium (through chromedriver and selenium) opens
generated reports from files, and the plots, heatmap and cluster highlights must render,
react (hover, zoom) and log no console error; a screenshot is kept as a test artifact."""

from __future__ import annotations

import json
import re
import time

import numpy as np
import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from tests.provenance.report.browser import (
    PAGE_READY,
    PLOTS_READY,
    WIDTHS,
    chromium,
    console_errors,
    full_page_screenshot,
    open_file,
)
from tests.runners.clihelp import prov

INK = """
const c = arguments[0].querySelector('canvas'), x = c.getContext('2d');
const d = x.getImageData(0, 0, c.width, c.height).data; let n = 0;
for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && (d[i] < 200 || d[i + 2] < 120)) n++;
return n;"""


def test_real_report_in_chromium(real_diverge, tmp_path):
    from runners import api

    result, store, cwd, _ = real_diverge
    _, arrays = api.read_result(result)
    out = tmp_path / "report.html"
    p = prov("report", str(result), "--out", str(out), store=store, cwd=cwd)
    assert p.returncode == 0, p.stderr
    with chromium() as drv:
        seconds = open_file(drv, out, PLOTS_READY)
        plots = drv.find_elements(By.CSS_SELECTOR, ".plot[data-rendered='1']")
        assert [e.get_attribute("id") for e in plots] == ["plot-kl", "plot-dis"]
        for el in plots:  # something was drawn: grid, lines and ticks, not a blank canvas
            assert drv.execute_script(INK, el) > 500
        heat = drv.find_element(By.ID, "heatmap")
        assert heat.get_attribute("data-rendered") == "1" and drv.execute_script(INK, heat) > 50
        # every disagreement is highlighted in the decoded text, visibly
        dis = drv.find_elements(By.CSS_SELECTOR, "pre.text .hl.dis")
        assert len(dis) == int((~arrays["agree"]).sum()) > 0
        for el in dis:
            assert el.size["width"] > 0 and el.get_attribute("data-p")
            assert el.value_of_css_property("background-color") == "rgba(255, 201, 201, 1)"
        # hover: the reference margin of that position
        drv.execute_script("arguments[0].scrollIntoView({block: 'center'})", dis[0])
        ActionChains(drv).move_to_element(dis[0]).perform()
        tip = drv.find_element(By.ID, "tip")
        assert tip.is_displayed()
        pos = int(dis[0].get_attribute("data-p"))
        assert f"position {pos} (DISAGREE)" in tip.text
        shown = re.search(r"reference margin p1−p2: (\S+)", tip.text)
        assert shown and float(shown.group(1)) == pytest.approx(float(arrays["margin"][pos]),
                                                                 rel=1e-3, abs=1e-12)
        # zoom: drag across the KL plot; both plots follow; double-click resets
        kl = drv.find_element(By.CSS_SELECTOR, "#plot-kl canvas")
        drv.execute_script("arguments[0].scrollIntoView({block: 'center'})", kl)
        full = drv.find_element(By.ID, "plot-kl").get_attribute("data-view")
        w = kl.size["width"]
        ActionChains(drv).move_to_element_with_offset(kl, -w // 4, 0).click_and_hold() \
            .move_by_offset(w // 4, 0).release().perform()
        zoomed = drv.find_element(By.ID, "plot-kl").get_attribute("data-view")
        assert zoomed != full
        assert drv.find_element(By.ID, "plot-dis").get_attribute("data-view") == zoomed
        ActionChains(drv).double_click(kl).perform()
        assert drv.find_element(By.ID, "plot-kl").get_attribute("data-view") == full
        assert console_errors(drv) == []
        drv.execute_script("window.scrollTo(0, 0)")
        height = drv.execute_script("return document.body.scrollHeight")
        drv.set_window_size(1280, min(height + 100, 6000))
        shot = tmp_path / "report.png"
        assert drv.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    print(f"\nreport opened in {seconds:.2f} s; screenshot: {shot}")


def test_100k_report_opens_in_chromium(synthetic_100k, demo_model_dir, tmp_path):
    from provenance.report import write_report

    out = write_report(str(synthetic_100k), tmp_path / "big.html", model=demo_model_dir)
    assert out.stat().st_size < 10 * 1000 * 1000
    with chromium() as drv:
        t0 = time.perf_counter()
        seconds = open_file(drv, out, PLOTS_READY, timeout=30)
        assert drv.find_elements(By.CSS_SELECTOR, ".hl.dis")
        assert console_errors(drv) == []
        shot = tmp_path / "big.png"
        drv.save_screenshot(str(shot))
    # time is measured (bench/bench_report.py), not asserted: this machine is shared
    print(f"\n100k-position report ({out.stat().st_size / 1e6:.2f} MB) ready in "
          f"{seconds:.2f} s ({time.perf_counter() - t0:.2f} s with the screenshot); {shot}")
    assert np.isfinite(seconds)


def _wide_sweep(store_dir) -> str:
    """A stored sweep record with three axes (six columns) and a cell flagged on long keys."""
    from provenance.store import open_store
    from provenance.store.records import encode

    axes = {"attn": ["eager", "sdpa"], "dtype": ["float32", "bfloat16", "float16"],
            "kv_cache_dtype": ["auto", "fp8_e4m3"]}
    long_key = ("runtime.torch.sdpa_kernels.cpu/float32/head_dim:128/mask:no/causal:yes/"
                "dropout:no/gqa:yes/allowed:FLASH_ATTENTION+EFFICIENT_ATTENTION+MATH")
    cells = []
    for i, (a, d, k) in enumerate((a, d, k) for a in axes["attn"] for d in axes["dtype"]
                                  for k in axes["kv_cache_dtype"]):
        gate = ({"gate": "reference"} if i == 0 else {"gate": "flagged", "differing": {
            long_key: {"reference": "MATH", "cell": "FLASH_ATTENTION"},
            "env.OMP_NUM_THREADS": {"reference": "1", "cell": "2"}}} if i == 5 else
            {"gate": "passed"})
        cells.append({"label": f"attn={a},dtype={d},kv_cache_dtype={k}",
                      "values": {"attn": a, "dtype": d, "kv_cache_dtype": k},
                      "reference": i == 0, "state": "complete", "runs": [f"{i:016x}"],
                      "node": {"hostname": "node-with-a-long-name.cluster.example.org"},
                      "gate": gate, "verdict": {"verdict": "bit-identical"},
                      "runtime": {"models": {"0": {"attn_implementation": a, "dtype": d}}},
                      "summary": {"top1_agreement": 0.98, "kl_ref_cand_mean": 1e-4,
                                  "kl_ref_cand_max": 2e-3, "kl_cand_ref_mean": 1e-4,
                                  "kl_cand_ref_p99": 1e-3, "first_disagreement": 40}
                      if gate["gate"] == "passed" else None})
    record = {"kind": "prov.sweep", "schema_version": 1, "name": "attn-x-dtype-x-kv",
              "spec_digest": "sha256:" + "ab" * 32, "axes": axes,
              "reference": cells[0]["label"], "cells": cells}
    return open_store(store_dir).put_bytes(encode(record), "sweep")


def test_run_comparison_and_sweep_reports_fit_1280_px(user_run, real_diverge, tmp_path):
    """At 1280 px the run report (a user's script), the comparison report (a stored
    comparison of two engine runs: long manifest keys in its diff) and a sweep report
    (six columns, a cell flagged on a long key) never scroll sideways."""
    store, cwd, run_id = user_run
    result, div_store, div_cwd, _ = real_diverge
    record = json.loads((result / "result.json").read_text())["comparison"]
    sweep = _wide_sweep(tmp_path / "sweep-store")
    targets = {"run": (run_id, store, cwd, PAGE_READY),
               "comparison": (record["comparison_record"], div_store, div_cwd, PLOTS_READY),
               "sweep": (sweep, tmp_path / "sweep-store", tmp_path, PAGE_READY)}
    with chromium() as drv:
        for name, (target, st, where, ready) in targets.items():
            out = tmp_path / f"{name}.html"
            p = prov("report", target, "--out", str(out), store=st, cwd=where)
            assert p.returncode == 0, p.stderr
            drv.set_window_size(1280, 2000)
            open_file(drv, out, ready)
            w = drv.execute_script(WIDTHS)
            assert w["window"] == 1280 and w["scroll"] <= w["client"] <= 1280, (name, w)
            assert console_errors(drv) == []
            full_page_screenshot(drv, tmp_path / f"{name}.png")
    print(f"\nscreenshots: {tmp_path}/{{run,comparison,sweep}}.png")
