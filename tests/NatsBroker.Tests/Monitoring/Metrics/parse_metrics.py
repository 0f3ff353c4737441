# Parses a Prometheus exposition from stdin with the Prometheus project's own Python client parsers and prints the
# families as JSON, so the .NET tests check /metrics with a real parser instead of their own.
# usage: python3 parse_metrics.py text|openmetrics < body
import json
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_text

body = sys.stdin.read()
parse = parse_openmetrics if sys.argv[1] == "openmetrics" else parse_text
families = {}
for family in parse(body):
    families[family.name] = {
        "type": family.type,
        "samples": [{"name": s.name, "labels": s.labels, "value": s.value} for s in family.samples],
    }
json.dump(families, sys.stdout)
