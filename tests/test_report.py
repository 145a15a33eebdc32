"""The audit's report.html, parsed: the header's figures, the rate chart's bucket for a store written in
a third of a second and for stores whose messages fill one bucket each, long names that wrap instead of
widening the page, and the problems worst first. Audits of golden stores written by the real RocketMQ
code, in process on the test session's SparkSession."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from mqtool.audit.report import FEW_BUCKETS, line_chart, render_html
from tests.golden import store_path

pytest.importorskip("pyspark")
pytestmark = pytest.mark.xdist_group("spark")

NOW = 1_800_000_000_000


class Page(HTMLParser):
    """The elements of a page: (tag, attributes, text directly inside), in document order."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str], list[str]]] = []
        self.open: list[int] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs), []))
        if tag not in ("meta", "br"):  # the void elements a report writes without "/>"
            self.open.append(len(self.elements) - 1)

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, dict(attrs), []))

    def handle_endtag(self, tag):
        if any(self.elements[i][0] == tag for i in self.open):
            while self.elements[self.open.pop()][0] != tag:
                pass

    def handle_data(self, data):
        if self.open:
            self.elements[self.open[-1]][2].append(data)

    def find(self, tag: str, **attrs: str) -> list[tuple[dict[str, str], str]]:
        return [
            (a, "".join(text))
            for t, a, text in self.elements
            if t == tag and all(a.get(k) == v for k, v in attrs.items())
        ]

    def figures(self) -> list[dict]:
        """Each chart: its caption, and the markers and lines of its plot."""
        out, current = [], None
        for tag, attrs, text in self.elements:
            if tag == "figcaption":
                current = {"title": "".join(text), "circles": [], "polylines": []}
                out.append(current)
            elif current is not None and tag == "circle":
                current["circles"].append((float(attrs["cx"]), float(attrs["cy"])))
            elif current is not None and tag == "polyline":
                points = [tuple(map(float, p.split(","))) for p in attrs["points"].split()]
                current["polylines"].append(points)
        return out


def _audit(spark, out: Path, *stores: str) -> tuple[dict, Page]:
    from mqtool.audit.plan import AuditOptions
    from mqtool.audit.run import run_audit

    run_audit(AuditOptions(stores=list(stores), output=out, now=NOW, check_crc=False), spark=spark)
    return json.loads((out / "audit.json").read_text()), Page((out / "report.html").read_text())


@pytest.fixture(scope="module")
def fleet(spark, tmp_path_factory) -> tuple[dict, Page]:
    """store-c (errors, warnings, infos), store-rocksdb-v2 (infos) and store-timer-crash (warnings),
    written days apart: one bucket width for all, so each store's messages fall in one or two buckets."""
    out = tmp_path_factory.mktemp("report") / "fleet"
    stores = [str(store_path(s)) for s in ("store-c", "store-rocksdb-v2", "store-timer-crash")]
    return _audit(spark, out, *stores)


@pytest.fixture(scope="module")
def quick(spark, tmp_path_factory) -> tuple[dict, Page]:
    """store-rocksdb-v2 alone: its messages were stored within 350 ms."""
    return _audit(spark, tmp_path_factory.mktemp("report") / "quick", str(store_path("store-rocksdb-v2")))


def test_the_header_says_how_long_the_audit_took(fleet) -> None:
    doc, page = fleet
    header = page.find("p", **{"class": "note"})[0][1]
    total = re.search(r"total (\d+\.\d) s", header)
    assert total, header
    assert float(total.group(1)) == pytest.approx(doc["scan"]["seconds"]["total"], abs=0.05)
    assert doc["scan"]["seconds"]["total"] >= doc["scan"]["seconds"]["scan"] > 0
    assert f"{doc['scan']['splits']} ranges" in header and "generated 2027-01-15 08:00:00 UTC" in header
    assert "  " not in header and "None" not in header


def test_a_store_written_in_a_third_of_a_second_gets_buckets_from_its_span(quick) -> None:
    doc, page = quick
    span = doc["stores"][0]["lastStoreTimestamp"] - doc["stores"][0]["firstStoreTimestamp"]
    assert span < 1000
    bucket = doc["scan"]["bucketMs"]
    assert span / bucket > FEW_BUCKETS  # a curve, not one 1-second bucket
    starts = {r["bucketStart"] for r in doc["rates"]}
    assert len(starts) > FEW_BUCKETS
    (rate,) = [f for f in page.figures() if "messages per" in f["title"]]
    assert f"messages per {bucket} ms" in rate["title"]
    ys = {y for line in rate["polylines"] for _, y in line}
    assert len(ys) > 2  # the rate changes over the axis


def test_stores_whose_messages_fill_one_bucket_are_points_not_flat_lines(fleet) -> None:
    doc, page = fleet
    charts = [f for f in page.figures() if "messages per" in f["title"]]
    assert len(charts) == 3
    for chart in charts:
        assert chart["circles"], chart["title"]
        xs = [x for x, _ in chart["circles"]]
        # markers sit inside the axis (60 .. 980 of the 1000 wide plot), none at its two ends
        assert all(60 < x < 980 for x in xs), chart["title"]
        for line in chart["polylines"]:
            flat_across = len({y for _, y in line}) == 1 and min(x for x, _ in line) <= 60.5
            assert not flat_across, chart["title"]


def test_one_bucket_is_one_point_in_the_middle() -> None:
    page = Page(line_chart({"TopicA": [(1_000, 7)]}, title="t", step=1_000))
    (chart,) = page.figures()
    assert chart["polylines"] == [] and chart["circles"] == [(520.0, chart["circles"][0][1])]
    many = Page(line_chart({"T": [(k * 10, k % 3) for k in range(FEW_BUCKETS + 5)]}, title="t", step=10))
    (chart,) = many.figures()
    assert chart["circles"] == [] and len(chart["polylines"][0]) == 2 * (FEW_BUCKETS + 5)


def test_long_names_wrap_inside_the_page() -> None:
    topic = "T" + "very_long_topic_name_without_any_space_" * 8
    doc = {
        "scan": {"bucketMs": 1000},
        "stores": [{"store": "/data/" + "s" * 150, "commitlogBytes": 1}],
        "rates": [{"store": "/data/" + "s" * 150, "topic": topic, "bucketStart": 0, "messages": 3}],
        "queues": [{"store": "/data/" + "s" * 150, "topic": topic, "queueId": 0}],
    }
    page = Page(render_html(doc))
    (style,) = page.find("style")
    rules: dict[str, str] = {}
    for selectors, body in re.findall(r"([^{}]+)\{([^}]*)\}", style[1]):
        for selector in selectors.split(","):
            rules[selector.strip()] = rules.get(selector.strip(), "") + ";" + body
    for selector in ("td", "th", ".legend span", "figcaption"):
        assert "overflow-wrap:anywhere" in rules[selector], selector
    for selector in ("table", ".legend span", "svg"):
        assert "max-width:100%" in rules[selector], selector
    assert any(topic in text for _, text in page.find("span"))  # the legend names it whole
    assert all("viewbox" in a for a, _ in page.find("svg"))  # (attribute names come lower-cased)


def test_problems_are_worst_first(fleet) -> None:
    doc, page = fleet
    rank = {"error": 0, "warning": 1, "info": 2}
    cells = [text for a, text in page.find("td") if a.get("class", "").startswith("sev-")]
    assert cells == sorted(cells, key=rank.__getitem__)
    assert cells[0] == "error" and {"warning", "info"} <= set(cells)
    assert [p["severity"] for p in doc["problems"]] == sorted(
        (p["severity"] for p in doc["problems"]), key=rank.__getitem__
    )
