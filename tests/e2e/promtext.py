"""A strict parser of the Prometheus text exposition format 0.0.4, for
checking a live /metrics whole: every line is a HELP, a TYPE or a sample;
each family is announced (HELP, then TYPE) once, before its samples, which
are contiguous; names and label names are well formed, label values use
only the three escapes the format has; no series appears twice; counters
end in _total; a histogram has, per label set, buckets with increasing
`le` ending in +Inf, cumulative counts that never decrease, and a _sum and
a _count equal to the +Inf bucket. Anything else raises ExpositionError
naming the line."""
import math
import re

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
TYPES = ("counter", "gauge", "histogram", "summary", "untyped")
ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}


class ExpositionError(ValueError):
    pass


class Family:
    def __init__(self, name, help_text):
        self.name, self.help, self.type = name, help_text, None
        self.samples = []  # (sample name, {label: value}, float)

    def value(self, sample_name=None, **labels):
        """The one sample of this name with exactly these labels."""
        want = sample_name or self.name
        for name, lab, v in self.samples:
            if name == want and lab == labels:
                return v
        raise KeyError("%s%r" % (want, labels))


def _labels(text, lineno):
    """Parses `{a="x",b="y"}` from the start of text; returns (dict, rest)."""
    labels, i = {}, 1
    while True:
        if text[i:i + 1] == "}":
            return labels, text[i + 1:]
        m = re.match(r"([^=]*)=\"", text[i:])
        if not m or not LABEL_NAME.match(m.group(1)) or m.group(1).startswith("__"):
            raise ExpositionError("line %d: bad label name in %r" % (lineno, text))
        name, i, value = m.group(1), i + m.end(), []
        while True:
            if i >= len(text):
                raise ExpositionError("line %d: unterminated label value" % lineno)
            c = text[i]
            if c == "\\":
                if text[i + 1:i + 2] not in ESCAPES:
                    raise ExpositionError("line %d: bad escape in a label value" % lineno)
                value.append(ESCAPES[text[i + 1]])
                i += 2
            elif c == '"':
                i += 1
                break
            elif c == "\n":
                raise ExpositionError("line %d: newline in a label value" % lineno)
            else:
                value.append(c)
                i += 1
        if name in labels:
            raise ExpositionError("line %d: label %s twice" % (lineno, name))
        labels[name] = "".join(value)
        if text[i:i + 1] == ",":
            i += 1
        elif text[i:i + 1] != "}":
            raise ExpositionError("line %d: expected , or } after a label" % lineno)


def _value(text, lineno):
    if text in ("+Inf", "-Inf", "NaN"):
        return float(text)
    if not re.match(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?\Z", text):
        raise ExpositionError("line %d: bad value %r (no timestamps here)" % (lineno, text))
    return float(text)


def _sample_names(family):
    if family.type == "histogram":
        return {family.name + s for s in ("_bucket", "_sum", "_count")}
    if family.type == "summary":
        return {family.name, family.name + "_sum", family.name + "_count"}
    return {family.name}


def _check_histogram(fam):
    series = {}
    for name, labels, v in fam.samples:
        rest = tuple(sorted((k, x) for k, x in labels.items() if k != "le"))
        s = series.setdefault(rest, {"buckets": [], "sum": None, "count": None})
        if name.endswith("_bucket"):
            if "le" not in labels:
                raise ExpositionError("%s: a bucket without le" % fam.name)
            s["buckets"].append((_value(labels["le"], 0), v))
        elif name.endswith("_sum"):
            s["sum"] = v
        else:
            s["count"] = v
    for rest, s in series.items():
        les = [le for le, _ in s["buckets"]]
        counts = [c for _, c in s["buckets"]]
        where = "%s%s" % (fam.name, dict(rest))
        if not les or les[-1] != math.inf:
            raise ExpositionError("%s: buckets must end with le=+Inf" % where)
        if any(a >= b for a, b in zip(les, les[1:])):
            raise ExpositionError("%s: le values not increasing" % where)
        if any(a > b for a, b in zip(counts, counts[1:])):
            raise ExpositionError("%s: bucket counts not cumulative" % where)
        if s["sum"] is None or s["count"] is None:
            raise ExpositionError("%s: _sum or _count missing" % where)
        if s["count"] != counts[-1]:
            raise ExpositionError("%s: _count %s is not the +Inf bucket %s"
                                  % (where, s["count"], counts[-1]))


def parse(text):
    """Returns {family name: Family}, in order, or raises ExpositionError."""
    if not text.endswith("\n"):
        raise ExpositionError("the text must end with a newline")
    families, current, seen = {}, None, set()
    for lineno, line in enumerate(text[:-1].split("\n"), 1):
        if line.startswith("# HELP "):
            name, _, help_text = line[7:].partition(" ")
            if not NAME.match(name) or name in families:
                raise ExpositionError("line %d: bad or repeated family %r" % (lineno, name))
            current = families[name] = Family(name, help_text)
        elif line.startswith("# TYPE "):
            name, _, kind = line[7:].partition(" ")
            if current is None or name != current.name or current.type or current.samples:
                raise ExpositionError("line %d: TYPE of %r not right after its HELP"
                                      % (lineno, name))
            if kind not in TYPES:
                raise ExpositionError("line %d: unknown type %r" % (lineno, kind))
            if kind == "counter" and not name.endswith("_total"):
                raise ExpositionError("line %d: counter %s without _total" % (lineno, name))
            current.type = kind
        elif not line or line.startswith("#"):
            raise ExpositionError("line %d: empty line or stray comment" % lineno)
        else:
            m = re.match(r"[^{ ]+", line)
            name = m.group(0)
            if current is None or current.type is None or name not in _sample_names(current):
                raise ExpositionError("line %d: sample %s outside its family" % (lineno, name))
            rest = line[len(name):]
            labels = {}
            if rest.startswith("{"):
                labels, rest = _labels(rest, lineno)
            if not rest.startswith(" ") or " " in rest[1:]:
                raise ExpositionError("line %d: expected one space then the value" % lineno)
            key = (name, tuple(sorted(labels.items())))
            if key in seen:
                raise ExpositionError("line %d: series repeated" % lineno)
            seen.add(key)
            current.samples.append((name, labels, _value(rest[1:], lineno)))
    for fam in families.values():
        if fam.type is None:
            raise ExpositionError("family %s has HELP but no TYPE" % fam.name)
        if fam.type == "histogram":
            _check_histogram(fam)
    return families


def sample_names(families):
    """Every sample name that occurs (a histogram's _bucket, _sum, _count)."""
    return {name for fam in families.values() for name, _, _ in fam.samples}
