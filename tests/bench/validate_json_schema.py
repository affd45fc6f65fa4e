#!/usr/bin/env python3
"""Validates JSON documents against a JSON Schema (draft 2020-12).

Usage: validate_json_schema.py SCHEMA DOCUMENT [DOCUMENT ...]

Prints "DOCUMENT: valid" or "DOCUMENT: invalid" for each document, then one
line per error ("DOCUMENT: path: message"). Exit status: 0 when every document
is valid, 1 when one is not, 2 for usage errors or unreadable files, 77 when the
jsonschema package is missing (the C++ test then skips with that reason;
`docker/install-deps.sh --test` installs it).
"""
import json
import sys

try:
    import jsonschema
except ImportError:
    print("validate_json_schema.py: the jsonschema package is not installed", file=sys.stderr)
    sys.exit(77)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        schema = load(argv[1])
        documents = [(path, load(path)) for path in argv[2:]]
    except (OSError, ValueError) as e:
        print(f"validate_json_schema.py: {e}", file=sys.stderr)
        return 2
    validator_class = jsonschema.Draft202012Validator
    validator_class.check_schema(schema)
    validator = validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)
    all_valid = True
    for path, document in documents:
        errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
        print(f"{path}: {'invalid' if errors else 'valid'}")
        for error in errors:
            where = "/".join(str(p) for p in error.absolute_path) or "(root)"
            print(f"{path}: {where}: {error.message}")
        all_valid = all_valid and not errors
    return 0 if all_valid else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
