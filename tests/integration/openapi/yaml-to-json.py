#!/usr/bin/python3
"""Convert openapi/floe.yaml to JSON on stdout, rejecting what PyYAML lets pass.

PyYAML (Debian python3-yaml; js-yaml is not in node_modules) silently keeps the
last of two equal mapping keys, which in a hand-written OpenAPI document hides an
operation or a response.  This loader refuses duplicate keys and any key that is
not a string (an unquoted 200 or `on:` would turn into a number or a boolean), and
prints the offending line.
"""
import json
import sys

import yaml

try:
    from yaml import CSafeLoader as Base
except ImportError:
    from yaml import SafeLoader as Base


class StrictLoader(Base):
    pass


def construct_mapping(loader, node, deep=False):
    loader.flatten_mapping(node)
    out = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        where = f"line {key_node.start_mark.line + 1}"
        if not isinstance(key, str):
            raise yaml.constructor.ConstructorError(
                None, None, f"{where}: mapping key {key!r} is not a string (quote it)", key_node.start_mark)
        if key in out:
            raise yaml.constructor.ConstructorError(
                None, None, f"{where}: duplicate key {key!r}", key_node.start_mark)
        out[key] = loader.construct_object(value_node, deep=deep)
    return out


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)

with open(sys.argv[1], "rb") as f:
    doc = yaml.load(f, Loader=StrictLoader)
json.dump(doc, sys.stdout, default=str)
