#!/usr/bin/python3
"""Convert the upstream Iceberg REST OpenAPI YAML to JSON on stdout.

js-yaml cannot parse the upstream file (deficient indentation at 158:15), so the
tests use PyYAML from Debian's python3-yaml through /usr/bin/python3 (the image's
pyenv python3 is a different interpreter). Integer response-code keys become
strings, and dates (if any) are emitted as ISO strings, so the result is plain
JSON Schema input for Ajv.
"""
import json
import sys

import yaml

try:
    from yaml import CSafeLoader as Loader
except ImportError:  # pure-python fallback, ~10x slower but equivalent
    from yaml import SafeLoader as Loader


def stringify_keys(node):
    if isinstance(node, dict):
        return {str(k): stringify_keys(v) for k, v in node.items()}
    if isinstance(node, list):
        return [stringify_keys(v) for v in node]
    return node


if sys.argv[1] == "-":
    doc = yaml.load(sys.stdin.buffer, Loader=Loader)
else:
    with open(sys.argv[1], "rb") as f:
        doc = yaml.load(f, Loader=Loader)
json.dump(stringify_keys(doc), sys.stdout, default=str)
