"""What discovery says of a function or a class from its ast: a function's
signature, the kinds its parameters take, its docstring examples' inputs
and its gate facts; a class's methods, how each is called, and why a
class is skipped."""

import ast

from .builders import _init
from .facts import _function_facts
from .kinds import _last_name, annotation_kind, name_kind
from .ladder import doctest_key, ladder_key


def _is_overload(node):
    for d in node.decorator_list:
        if _last_name(d.func if isinstance(d, ast.Call) else d) == "overload":
            return True
    return False


def _describe_function(node, aliases, names, bound=False, signature_only=False):
    """A function's signature and facts; bound drops the first positional
    parameter (self or cls), which the call supplies. signature_only
    leaves out the facts and the doctests."""
    a = node.args
    positional = a.posonlyargs + a.args
    required = len(positional) - len(a.defaults)
    if bound and positional:
        positional = positional[1:]
        required = max(0, required - 1)
    kwonly_required = [k.arg for k, d in zip(a.kwonlyargs, a.kw_defaults) if d is None]
    kinds = [name_kind(p.arg, annotation_kind(p.annotation)) for p in positional[:required]]
    out = {
        "name": node.name,
        "line": node.lineno,
        "async": isinstance(node, ast.AsyncFunctionDef),
        "required": required,
        "vararg": a.vararg.arg if a.vararg else "",
        "varkw": a.kwarg.arg if a.kwarg else "",
        "kwonly_required": kwonly_required,
        "params": [p.arg for p in positional],
        "kinds": kinds,
    }
    # A suppression comment may sit on any line from the first decorator
    # to the signature's last (where a formatter puts "):").
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    last = max(node.lineno, node.body[0].lineno - 1) if node.body else node.lineno
    if (first, last) != (node.lineno, node.lineno):
        out["lines"] = [first, last]
    if signature_only:
        # A receiver's constructor: one taking only *args is built with
        # none (dict-like classes), never with one ladder value.
        return out
    out["facts"] = _function_facts(node, aliases, names)
    doctests = _doctests(node, required, len(positional), a.vararg is not None)
    if a.vararg is not None and required == 0 and not positional:
        # Only *args: called with no arguments the body mostly has nothing
        # to work on. Its rungs are the call with none, first, then one
        # ladder value of the kind its name or annotation asks for.
        out["required"] = 1
        name, ann = a.vararg.arg, annotation_kind(a.vararg.annotation)
        kind = name_kind(name, ann)
        if kind == ann and name.endswith("s"):  # *paths: each a path
            kind = name_kind(name[:-1], ann)
        out["kinds"] = [kind]
        if [] not in doctests:
            doctests = [[]] + doctests[:MAX_DOCTESTS - 1]
    if doctests:
        out["doctests"] = doctests
    return out


# A function's doctests give at most this many rungs: the author's own
# inputs, tried before the ladder's.
MAX_DOCTESTS = 5


def _doctests(node, required, positional, vararg):
    """The arguments of the calls of this function in its docstring's
    examples (>>> name(...), >>> obj.name(...)), each a list of literal
    sources, when every argument is a literal and their number fits the
    signature; never evaluated here, only parsed."""
    try:
        doc = ast.get_docstring(node, clean=False)
    except TypeError:
        return []
    if not doc or ">>>" not in doc:
        return []
    out = []
    for line in doc.splitlines():
        line = line.strip()
        if not line.startswith(">>> "):
            continue
        try:
            expr = ast.parse(line[4:].strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        if not isinstance(expr, ast.Call) or expr.keywords or _last_name(expr.func) != node.name:
            continue
        if any(isinstance(a, ast.Starred) for a in expr.args):
            continue
        n = len(expr.args)
        if n < required or (n > positional and not vararg):
            continue
        try:
            for a in expr.args:
                ast.literal_eval(a)
            args = [ast.unparse(a) for a in expr.args]
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            continue
        if args not in out:
            out.append(args)
        if len(out) == MAX_DOCTESTS:
            break
    return out


# Classes whose methods are not probed, by what their bases say they are:
# an instance of them is not what users build and call.
_ENUMS = {"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag", "ReprEnum"}
_DECLARATIONS = {"Protocol": "a protocol: it declares methods, it does not implement them",
                 "TypedDict": "a TypedDict: it has no methods of its own"}


def _class_skip(node):
    """Why a class's methods are not probed, or ""."""
    for b in node.bases:
        name = _last_name(b.value if isinstance(b, ast.Subscript) else b)
        if name in _DECLARATIONS:
            return "the class is " + _DECLARATIONS[name]
        if name in _ENUMS:
            return "the class is an enumeration: its members are its instances, not built from inputs"
        if name in ("BaseException", "Exception") or name.endswith(("Error", "Exception", "Warning")):
            return "the class is an exception: it is raised, not called"
    for n in node.body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                _last_name(d) in ("abstractmethod", "abstractproperty") for d in n.decorator_list):
            return "the class is abstract (%s is an abstractmethod): its subclasses implement it" % n.name
    return ""


def _receiver(node):
    """What building an instance requires: the arity and kinds of the
    class's own __init__ (self dropped), or of its fields for a dataclass,
    attrs class or NamedTuple; none when it inherits its constructor
    (discover resolves that across the package)."""
    sig = _init(node) or {"arity": 0, "kinds": []}
    return {"arity": sig["arity"], "kinds": sig["kinds"]}


def _method_kind(node):
    for d in node.decorator_list:
        name = _last_name(d)
        if name in ("staticmethod", "classmethod"):
            return name
        if name in ("property", "cached_property"):
            return "property"
    return "method"


def _describe_class(node, aliases, names):
    """One entry per method the class itself defines (inherited methods are
    probed on the class that defines them), named Class.method. Special
    methods (__repr__, __eq__...) are left out: they are called by the
    language, on values the ladder does not build."""
    skip = _class_skip(node)
    recv = None
    by_name = {}
    building = []  # what runs when an instance is built: the gate must see it
    for n in node.body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if n.name in ("__init__", "__new__", "__post_init__"):
                building.append(n)
            if n.name.startswith("__") and n.name.endswith("__"):
                continue
            by_name.setdefault(n.name, []).append(n)
    own = set(by_name)

    def facts_of(fn, facts=None):
        # A call of self.x() or cls.x() is a call of this class's own x:
        # local, so the gate follows it.
        if facts is None:
            facts = _function_facts(fn, aliases, names)
        for c in facts["calls"]:
            if c["name"].startswith(".") and c["name"][1:] in own:
                c["name"], c["local"] = node.name + c["name"], True
        return facts
    built = []
    for n in building:
        built.extend(facts_of(n)["calls"])
    out = []
    for name, nodes in by_name.items():
        real = [n for n in nodes if not _is_overload(n)] or nodes[-1:]
        first = real[0]
        kind = _method_kind(first)
        d = _describe_function(first, aliases, names, bound=kind != "staticmethod")
        d["facts"] = facts_of(first, d["facts"])
        if kind != "staticmethod":
            # Calling it builds an instance (or may: cls(...)): the
            # constructor's calls are its calls.
            d["facts"]["calls"].extend(dict(c) for c in built)
        d["name"] = node.name + "." + name
        d["class"], d["attr"], d["kind"] = node.name, name, kind
        if any(_last_name(dec) in ("abstractmethod", "abstractproperty") for dec in first.decorator_list):
            d["abstract"] = True
        if kind == "property":
            d["required"], d["kinds"] = 0, []
        d["ladder"] = ladder_key(d["required"], d["kinds"])
        if kind == "property":
            d.pop("doctests", None)
        if kind in ("method", "property"):
            if recv is None:
                recv = _receiver(node)
            d["receiver"] = recv
            d["ladder"] += "@" + ladder_key(recv["arity"], recv["kinds"])
        d["ladder"] += doctest_key(d.get("doctests"))
        if skip:
            d["skip"] = skip
        for other in nodes[1:]:  # a property's setter: its calls are the gate's too
            d["facts"]["calls"].extend(facts_of(other)["calls"])
        out.append(d)
    return out
