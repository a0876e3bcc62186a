"""CSV: the main table (with a totals row), then each section after a `# title` line."""
import csv
import io

from . import main_columns


def render(report: dict) -> str:
    buf = io.StringIO()
    cols = main_columns(report)
    w = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in report.get("rows", []):
        w.writerow(r)
    if report.get("totals"):
        w.writerow(report["totals"])
    for sec in report.get("sections", []):
        buf.write(f"\n# {sec['title']}\n")
        sw = csv.DictWriter(buf, fieldnames=sec["columns"], extrasaction="ignore", lineterminator="\n")
        sw.writeheader()
        for r in sec["rows"]:
            sw.writerow(r)
    return buf.getvalue()
