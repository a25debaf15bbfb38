"""What a parameter takes, as a kind: by its annotation (annotation_kind)
or by its name (name_kind). The ladder (ladder.py) gives each kind its
values first."""

import ast


# Annotation names (the last dotted part, any subscript dropped) and the
# kind each means.
ANNOTATION_KINDS = {
    "int": "int", "float": "float", "str": "str", "bytes": "bytes", "bool": "bool",
    "list": "list", "List": "list", "Sequence": "list", "MutableSequence": "list", "Iterable": "list",
    "Collection": "list", "Iterator": "list",
    "tuple": "tuple", "Tuple": "tuple",
    "dict": "dict", "Dict": "dict", "Mapping": "dict", "MutableMapping": "dict",
    "date": "date", "datetime": "datetime", "timedelta": "timedelta", "time": "time",
    "Path": "path", "PurePath": "path", "PosixPath": "path", "PathLike": "path",
    "IO": "stream", "BinaryIO": "stream", "TextIO": "stream", "BytesIO": "stream", "StringIO": "stream",
    "IOBase": "stream", "RawIOBase": "stream", "BufferedIOBase": "stream", "TextIOBase": "stream",
    "Callable": "callable", "socket": "socket",
}
# The kinds whose values are strings: a parameter annotated str still asks
# for them by its name.
_STRING_KINDS = {"version", "url", "email", "zone", "localename", "isodate", "json", "encoding", "errors",
                 "digest", "format", "pattern", "source", "attr", "modname"}
# Parameter names, whole or as a suffix after "_", and the kind each asks
# for. A path name gets the path rungs as pathlib.Path objects, unless its
# annotation says str; the scalar names only put the ladder's values of
# their type first (no rungs more), so a text and a width meet on a rung.
_NAMES = {
    "version": "version", "ver": "version",
    "url": "url", "uri": "url", "href": "url", "link": "url", "endpoint": "url",
    "email": "email", "mail": "email",
    "tz": "zone", "tzname": "zone", "timezone": "zone", "zone": "zone",
    "locale": "localename", "lang": "localename", "language": "localename", "localename": "localename",
    "datestr": "isodate", "datestring": "isodate", "timestr": "isodate", "iso": "isodate", "isoformat": "isodate",
    "when": "isodate", "since": "isodate", "until": "isodate", "timestamp": "isodate",
    "date_string": "isodate", "date_str": "isodate", "time_string": "isodate",
    "json": "json",
    "data": "data", "buf": "data", "buffer": "data", "payload": "data", "raw": "data",
    "path": "path", "filename": "path", "filepath": "path", "fname": "path", "pathname": "path",
    "dirname": "path", "directory": "path", "dir": "path", "folder": "path",
    "encoding": "encoding", "charset": "encoding", "codec": "encoding",
    "errors": "errors",
    "digest": "digest", "digestmod": "digest", "algorithm": "digest", "algo": "digest", "hash_name": "digest",
    "fmt": "format", "format": "format", "datefmt": "format", "format_string": "format", "format_str": "format",
    "pattern": "pattern", "regex": "pattern", "regexp": "pattern", "pat": "pattern",
    "source": "source", "statement": "source", "stmt": "source", "expr": "source", "expression": "source",
    "attr": "attr", "attribute": "attr", "attrname": "attr", "attr_name": "attr",
    "module": "module", "mod": "module", "modname": "modname", "module_name": "modname", "mod_name": "modname",
    "timetuple": "timetuple", "tt": "timetuple", "time_tuple": "timetuple",
    "f": "stream", "fp": "stream", "fh": "stream", "fileobj": "stream", "fobj": "stream", "stream": "stream",
    "file": "stream", "infile": "stream", "outfile": "stream",
    "readline": "readline",
    "sock": "socket", "socket": "socket", "conn": "socket", "connection": "socket",
    "func": "callable", "function": "callable", "fn": "callable", "callback": "callable", "cb": "callable",
    "predicate": "callable", "pred": "callable",
    "cls": "class", "klass": "class", "class_": "class", "typ": "class",
    "obj": "object", "object": "object", "ob": "object", "instance": "object",
    "node": "node", "tree": "node",
    "n": "int", "num": "int", "count": "int", "width": "int", "size": "int", "length": "int", "index": "int",
    "idx": "int", "pos": "int", "lineno": "int", "level": "int", "depth": "int", "limit": "int",
    "text": "str", "string": "str", "s": "str", "word": "str", "msg": "str", "message": "str",
    "title": "str", "label": "str", "prefix": "str", "suffix": "str", "sep": "str", "name": "str",
    "globals": "dict", "locals": "dict", "globalns": "dict", "localns": "dict", "mapping": "dict", "ns": "dict",
    "items": "list", "seq": "list", "sequence": "list", "iterable": "list", "values": "list", "elements": "list",
}


def name_kind(name, annotated=""):
    """The kind a parameter's name asks for, given what its annotation
    says (annotation_kind): only a name whose annotation says nothing, or
    str for the string kinds, asks."""
    if annotated not in ("", "str"):
        return annotated
    low = name.lower().lstrip("_")
    kind = _NAMES.get(low) or _NAMES.get(low.rsplit("_", 1)[-1])
    if kind is None or (annotated == "str" and kind not in _STRING_KINDS):
        return annotated
    return kind


def annotation_kind(node):
    """The kind an annotation names, or "" when it names none the ladder
    knows: int, list[str], Optional[datetime], "Path", os.PathLike...
    Any annotation, however odd (a NUL in a string, thousands of unions),
    names a kind or none: it never ends discovery."""
    try:
        return _annotation_kind(node)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""


def _annotation_kind(node):
    if node is None:
        return ""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        node = ast.parse(node.value, mode="eval").body
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # X | None
        return _annotation_kind(node.left) or _annotation_kind(node.right)
    if isinstance(node, ast.Subscript):
        base = _last_name(node.value)
        if base in ("Optional", "Union"):
            inner = node.slice
            parts = inner.elts if isinstance(inner, ast.Tuple) else [inner]
            for part in parts:
                k = _annotation_kind(part)
                if k:
                    return k
            return ""
        if base == "Annotated":
            inner = node.slice
            return _annotation_kind(inner.elts[0] if isinstance(inner, ast.Tuple) else inner)
        return ANNOTATION_KINDS.get(base, "")
    return ANNOTATION_KINDS.get(_last_name(node), "")


def _last_name(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""
