#!/usr/bin/env python3
"""Validates JSON documents against a JSON Schema (draft 2020-12).

Usage: validate_json_schema.py [--ref OTHER_SCHEMA ...] SCHEMA DOCUMENT [DOCUMENT ...]

--ref makes another schema available by its $id, for SCHEMA's "$ref"s to it
(bench/report/schema/result.schema.json refers to bench/telemetry/telemetry.schema.json).

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


def make_validator(validator_class, schema, refs):
    kwargs = {"format_checker": validator_class.FORMAT_CHECKER}
    if refs:
        try:
            # jsonschema >= 4.18
            from referencing import Registry, Resource
            registry = Registry().with_resources(
                (ref["$id"], Resource.from_contents(ref)) for ref in refs)
            kwargs["registry"] = registry
        except ImportError:
            # jsonschema 4.17: the deprecated resolver with a store of schemas by $id
            kwargs["resolver"] = jsonschema.RefResolver.from_schema(
                schema, store={ref["$id"]: ref for ref in refs})
    return validator_class(schema, **kwargs)


def main(argv):
    args = argv[1:]
    ref_paths = []
    while len(args) >= 2 and args[0] == "--ref":
        ref_paths.append(args[1])
        args = args[2:]
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        schema = load(args[0])
        refs = [load(path) for path in ref_paths]
        documents = [(path, load(path)) for path in args[1:]]
    except (OSError, ValueError) as e:
        print(f"validate_json_schema.py: {e}", file=sys.stderr)
        return 2
    validator_class = jsonschema.Draft202012Validator
    validator_class.check_schema(schema)
    for ref in refs:
        validator_class.check_schema(ref)
    validator = make_validator(validator_class, schema, refs)
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
