"""Golden files of the report's output formats (PROV_UPDATE_GOLDEN=1 regenerates them)."""

from __future__ import annotations

import json
import re

import numpy as np

from provenance.report import build_report, sparkline_line
from tests.golden import check_golden
from tests.provenance.report.test_report import sweep_doc


def test_golden_sweep_page(tmp_path):
    (tmp_path / "sweep.json").write_text(json.dumps(sweep_doc()))
    page = build_report(str(tmp_path / "sweep.json"), store=None)
    page = page.replace(str(tmp_path), "TMP")
    page = re.sub(r"generated \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC by prov \S+",
                  "generated TIME by prov VERSION", page)
    check_golden("report/sweep.html", page)


def test_golden_sparkline():
    d = np.zeros(767, dtype=bool)
    d[[97, 229, 282, 658, 744]] = True
    d[400:420] = True
    check_golden("report/sparkline.txt", sparkline_line(d) + "\n" + sparkline_line(d, 20) + "\n")
