"""JSON: the report dict itself (schema p2pc-report/1)."""
import json


def render(report: dict) -> str:
    return json.dumps(report, indent=2, sort_keys=False) + "\n"
