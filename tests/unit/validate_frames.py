#!/usr/bin/python3
"""Validate server frames against the published JSON Schemas.

Reads one JSON frame per line on stdin. Each frame is validated against
the pty-ws/v1 envelope schema; a `pty.session_frame` payload is also
validated against the extension's SessionFramePayload $def. Exits 0 when
every frame is valid, 1 on any failure (each printed on stderr), 2 on a
usage problem, and 77 when python3-jsonschema is missing (the C test
turns that into a skip).

The schemas are found at $PTG_SCHEMA_DIR or, by default, in the
repository's tests/schemas (copies of the published schemas).
"""
import json
import os
import re
import sys
import urllib.parse

try:
    import jsonschema
except ImportError:
    print("validate_frames: python3-jsonschema is not installed", file=sys.stderr)
    sys.exit(77)

ENVELOPE = "pty-ws-v1.frames.schema.json"
EXTENSION = "pty-extensions-v1.frames.schema.json"

# RFC 3339 date-time (jsonschema only checks it with optional packages).
DATE_TIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def schema_dir():
    if os.environ.get("PTG_SCHEMA_DIR"):
        return os.environ["PTG_SCHEMA_DIR"]
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.path.join(repo, "tests", "schemas")


def format_checker():
    checker = jsonschema.FormatChecker()

    @checker.checks("date-time")
    def is_date_time(value):
        return not isinstance(value, str) or bool(DATE_TIME.match(value))

    @checker.checks("uri")
    def is_uri(value):
        if not isinstance(value, str):
            return True
        parts = urllib.parse.urlsplit(value)
        return bool(parts.scheme) and " " not in value

    return checker


def load(name):
    with open(os.path.join(schema_dir(), name), encoding="utf-8") as f:
        return json.load(f)


def main():
    checker = format_checker()
    envelope = load(ENVELOPE)
    extension = load(EXTENSION)
    cls = jsonschema.validators.validator_for(envelope)
    env_validator = cls(envelope, format_checker=checker)
    # Refer to the $def through the extension document so its own
    # "#/$defs/..." references resolve.
    frame_schema = dict(extension)
    frame_schema.pop("properties", None)
    frame_schema.pop("additionalProperties", None)
    frame_schema["$ref"] = "#/$defs/SessionFramePayload"
    frame_validator = cls(frame_schema, format_checker=checker)

    failures = 0
    count = 0
    for lineno, line in enumerate(sys.stdin, 1):
        if not line.strip():
            continue
        count += 1
        try:
            frame = json.loads(line)
        except ValueError as e:
            print(f"line {lineno}: not JSON: {e}", file=sys.stderr)
            failures += 1
            continue
        errors = list(env_validator.iter_errors(frame))
        if isinstance(frame, dict) and frame.get("op") == "pty.session_frame":
            errors += list(frame_validator.iter_errors(frame.get("payload")))
        for e in errors:
            path = "/".join(str(p) for p in e.absolute_path)
            print(f"line {lineno}: /{path}: {e.message}", file=sys.stderr)
            print(f"  frame: {line.strip()[:300]}", file=sys.stderr)
        failures += bool(errors)
    print(f"validate_frames: {count} frames, {failures} invalid", file=sys.stderr)
    if count == 0:
        return 2
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
