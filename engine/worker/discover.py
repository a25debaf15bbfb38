"""Discover mode: each module parsed with ast, never imported; its
functions, their signatures and ladders, and the facts the gate needs."""

import ast
import os
import resource
import stat

from .bytecode import bytecode
from .canon import display
from .channel import Channel, _encode
from . import builders
from .builders import Index, _init, sketch_class, sketch_factory
from .ladder import (MAX_ARITY, MAX_RECEIVER_ARITY, Built, _last_name, annotation_kind, doctest_key, ladder_key,
                     name_kind, receiver_key, rungs_of)
from .testcases import test_classes


def discover(req):
    global OPENERS
    ch = Channel(req.get("nonce", ""))
    limit = req.get("address_space_limit")
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if req.get("openers"):
        OPENERS = set(req["openers"])
    if req.get("moving"):
        builders.MOVING = tuple(req["moving"])
    max_arity = req.get("max_arity", MAX_ARITY)
    max_receiver = req.get("max_receiver_arity", MAX_RECEIVER_ARITY)
    keys = {str(a): (a, [], None, None) for a in range(max_arity + 1)}
    # Every module is parsed before any is sent: a method's receivers may
    # be built by a class of another module of its root.
    recs, index = [], Index()
    for f in req["files"]:
        rec = describe_module(f["path"], f["rel"], req.get("code", False))
        module, root = f.get("module") or _module_of(f["rel"]), f.get("root", 0)
        index.add(root, module, rec.pop("classes", ()), rec.pop("factories", ()))
        recs.append((rec, module, root))
    index.finish()
    for rec, module, root in recs:
        for fn in rec.get("functions", []):
            if fn.get("receiver") is not None:
                resolve_receiver(fn, index, root, module)
            recv = fn.get("receiver")
            if fn["required"] <= max_arity and (recv is None or recv["arity"] <= max_receiver or recv.get("builds")):
                keys.setdefault(fn["ladder"], (fn["required"], fn["kinds"], recv, fn.get("doctests")))
        ch.send(rec)
    del recs
    # One record per ladder: all of them in one line would pass the
    # engine's longest record on a large audit (each doctest is a ladder).
    for k, (a, kinds, recv, doctests) in sorted(keys.items()):
        rungs = rungs_of(a, kinds, recv, doctests)
        if recv is None:
            ch.send({"k": "ladder", "rungs": {k: [display(r) for r in rungs]}})
        else:
            rec = {"k": "ladder", "rungs": {k: [display(args) for _, args in rungs]},
                   "receivers": {k: [show_args(r) for r, _ in rungs]}}
            if any(r.call is not None for r, _ in rungs):
                rec["callees"] = {k: [r.callee() for r, _ in rungs]}
            ch.send(rec)
    ch.send({"k": "done"}, flush=True)


def show_args(built):
    """A receiver's constructor arguments as a report shows them, an
    instance built for one as the expression that builds it."""
    out = []
    for a in built.args:
        if isinstance(a, Built):
            out.append("%s(%s)" % (a.callee(), ", ".join(show_args(a))))
        else:
            out.extend(display((a,)))
    return out


def _module_of(rel):
    """The import name of a module by its path under its root, where the
    request does not give it."""
    name = rel[:-3] if rel.endswith(".py") else rel
    name = name.replace("/", ".")
    return name[:-len(".__init__")] if name.endswith(".__init__") else name


def resolve_receiver(fn, index, root, module):
    """Gives a method its class's receiver as the package builds it (see
    builders), its ladder key to match, and lifts an abstract class's skip
    when a concrete subclass builds it."""
    found = index.resolve(root, module, fn["class"])
    if found is None or found[0] != module:
        return
    recv = fn["receiver"] = index.builds(root, module, found[1])
    if fn.get("skip", "").startswith("the class is abstract") and (recv.get("builds") or {}).get("recipes") \
            and not fn.get("abstract"):
        del fn["skip"]
    key = ladder_key(fn["required"], fn["kinds"]) + "@" + receiver_key(recv) + doctest_key(fn.get("doctests"))
    fn["ladder"] = key


def describe_module(path, rel, code=False):
    if not isinstance(path, str) or not isinstance(rel, str):
        # open() of an int would open (and close) a file descriptor.
        raise TypeError("describe_module takes a path and a relative path")
    rec = {"k": "module", "rel": rel}
    try:
        src = _read_source(path)
        if src is None:
            rec["status"] = "too-large"
            rec["error"] = "larger than %d bytes, the bound on a source file (a generated table, or a file made to exhaust memory): skipped" % MAX_SOURCE
            return rec
        tree = compile(src, rel, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except OSError as e:
        rec["status"] = "unreadable"
        rec["error"] = "%s: %s" % (type(e).__name__, e.strerror or e)
        if isinstance(e, PermissionError):
            rec["error"] += " (the probe user reads the tree as others do: chmod -R o+rX, or --runtime host)"
        return rec
    except Exception as e:  # SyntaxError, bytes that are not UTF-8, an AST too deep
        rec["status"] = "unparseable"
        rec["error"] = "%s: %s" % (type(e).__name__, _one_line(e))
        return rec
    rec["status"] = "ok"
    aliases = {}
    top_level = []
    for node in tree.body:
        _collect_imports(node, aliases)
    defs, classes = [], []
    _module_level(tree.body, defs, top_level, classes)
    names = {n.name for n in defs} | {c.name for c in classes}
    # A module-level name bound to one callable by name (_write = open)
    # is that callable wherever the module calls it.
    for name, targets in _bindings(tree.body, aliases).items():
        if len(targets) == 1 and name not in names and name not in aliases:
            aliases[name] = targets.pop()
    funcs, by_name = [], {}
    for node in defs:
        by_name.setdefault(node.name, []).append(node)
    for name, nodes in by_name.items():
        funcs.append(_describe_name(nodes, aliases, names))
    for f in funcs:
        f["ladder"] = ladder_key(f["required"], f["kinds"]) + doctest_key(f.get("doctests"))
    seen = set()
    tests = test_classes(rel, classes)
    for c in classes:
        if c.name not in seen and c.name not in by_name:  # the first definition is what a version switch lists
            seen.add(c.name)
            methods = _describe_class(c, aliases, names)
            if c.name in tests:
                for m in methods:
                    m["test_case"] = True
            funcs.extend(methods)
    funcs.sort(key=lambda f: f["line"])
    rec["functions"] = funcs
    module_doc = ast.get_docstring(tree, clean=False) or ""
    def facts_of(n):
        return _function_facts(n, aliases, names)
    rec["classes"] = [sketch_class(c, module_doc, facts_of) for c in classes]
    rec["factories"] = [f for f in (sketch_factory(d, facts_of) for d in defs) if f is not None]
    rec["module_facts"] = _facts(top_level, aliases, names)
    del tree, top_level, defs, by_name  # compiling parses the source again
    if code and len(src) <= MAX_MODULE_RECORD:
        pyc = bytecode(src, path)
        if pyc is not None:
            import base64  # discovery only: no scanned root is on sys.path here
            text = base64.b64encode(pyc).decode("ascii")
            # The record must stay within the engine's longest line, or the
            # module itself would be lost: the code is only a saving.
            if len(text) + len(_encode(rec)) <= MAX_MODULE_RECORD:
                rec["code"] = text
    return rec


# The longest module record discovery sends with its code: well within the
# engine's longest record line (maxRecord, 1 MiB).
MAX_MODULE_RECORD = 768 << 10


# Statements whose bodies run at import, and so can define module-level
# functions: version switches, optional imports, context managers.
_BLOCKS = (ast.If, ast.Try, ast.With, ast.AsyncWith) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())


def _module_level(body, defs, top_level, classes):
    """Every def and class that binds a module-level name, however deep in
    if, try and with blocks, and the code that runs at import."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defs.append(node)
            # Decorators and default values run at import, not at call.
            top_level.extend(node.decorator_list)
            top_level.extend(d for d in node.args.defaults + node.args.kw_defaults if d is not None)
        elif isinstance(node, ast.ClassDef):
            classes.append(node)
            # A class body runs at import; its methods' bodies do not.
            top_level.extend(node.decorator_list + node.bases + node.keywords)
            top_level.extend(n for n in node.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        elif isinstance(node, _BLOCKS):
            if isinstance(node, ast.If):
                top_level.append(node.test)
                blocks = [node.body, node.orelse]
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                top_level.extend(node.items)
                blocks = [node.body]
            else:
                top_level.extend(h.type for h in node.handlers if h.type is not None)
                blocks = [node.body, node.orelse, node.finalbody] + [h.body for h in node.handlers]
            for b in blocks:
                _module_level(b, defs, top_level, classes)
        elif not isinstance(node, (ast.Import, ast.ImportFrom)):
            top_level.append(node)


def _is_overload(node):
    for d in node.decorator_list:
        if _last_name(d.func if isinstance(d, ast.Call) else d) == "overload":
            return True
    return False


def _describe_name(nodes, aliases, names):
    """One entry per module-level name: what the import binds is what gets
    probed. @overload stubs fold into the implementation; of several
    definitions (an if/else version switch) the first real one gives the
    signature and the line, and the gate sees all of their calls."""
    real = [n for n in nodes if not _is_overload(n)] or nodes[-1:]
    out = _describe_function(real[0], aliases, names)
    for other in nodes:
        if other is real[0]:
            continue
        more = _describe_function(other, aliases, names)["facts"]
        out["facts"]["calls"].extend(more["calls"])
        out["facts"]["set_iters"] = sorted(set(out["facts"]["set_iters"]) | set(more["set_iters"]))
    if len(real) > 1:
        out["definitions"] = len(real)
    return out


# The largest source file discovery reads. Hand-written modules are far
# smaller; a bigger one (a generated table, an 8 GiB sparse file planted to
# exhaust memory) is listed as too large and skipped.
MAX_SOURCE = 4 << 20


def _read_source(path):
    """A source file's bytes, or None when it is above MAX_SOURCE. Only a
    regular file is read, without blocking: a FIFO, a device or a procfs
    file behind a link is an error, never a stalled discovery."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(0, "not a regular file")
        if st.st_size > MAX_SOURCE:
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(MAX_SOURCE + 1)
        return None if len(data) > MAX_SOURCE else data
    finally:
        os.close(fd)


def _one_line(e):
    if isinstance(e, SyntaxError) and e.lineno:
        return "%s (line %s)" % (e.msg, e.lineno)
    if isinstance(e, SyntaxError):
        return e.msg
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def _collect_imports(node, aliases):
    for sub in ast.walk(node):
        if isinstance(sub, ast.Import):
            for a in sub.names:
                if a.asname:
                    aliases[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    aliases[top] = top
        elif isinstance(sub, ast.ImportFrom) and sub.module and not sub.level:
            for a in sub.names:
                aliases[a.asname or a.name] = sub.module + "." + a.name


def _function_facts(node, aliases, names):
    """The gate's facts of one function's body, with its own imports."""
    local = dict(aliases)
    _collect_imports(node, local)
    return _facts(node.body, local, names)


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


def _dotted(expr, aliases):
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if isinstance(expr, ast.Name):
        if expr.id in aliases:
            return ".".join([aliases[expr.id]] + parts[::-1])
        if parts:  # a method on a local value: only its name is known
            return "." + parts[0]
        return expr.id
    if parts:  # a method on something computed: only its name is known
        return "." + parts[0]
    return ""


def _bindings(body, aliases):
    """The names a body binds to a callable by name (chmod = os.chmod;
    stat_func, chmod_func = _stat, os.chmod), each with every dotted name
    it is bound to somewhere in the body."""
    out = {}
    for n in _own_scope(body):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Tuple) and isinstance(n.value, ast.Tuple) and len(t.elts) == len(n.value.elts):
                    pairs = zip(t.elts, n.value.elts)
                else:
                    pairs = [(t, n.value)]
                for target, value in pairs:
                    if isinstance(target, ast.Name) and isinstance(value, (ast.Name, ast.Attribute)):
                        name = _dotted(value, aliases)
                        if name and not name.startswith("."):
                            out.setdefault(target.id, set()).add(name)
    return out


def _own_scope(body):
    """The nodes of body's own scope: not those of the functions, classes
    and lambdas defined in it, whose names are their own."""
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
    todo = [n for n in body if not isinstance(n, scopes)]
    while todo:
        n = todo.pop()
        yield n
        todo.extend(c for c in ast.iter_child_nodes(n) if not isinstance(c, scopes))


def _facts(body, aliases, names):
    """What the gate and the smell linter need: each call's dotted name
    (through the names the body binds to callables: a call of one is a
    call of each callable it may be), the mode of every open(), and loops
    over sets."""
    calls, set_iters = [], []
    bound = _bindings(body, aliases)
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Call):
                if isinstance(n.func, ast.Name) and n.func.id in bound and n.func.id not in aliases:
                    called = sorted(bound[n.func.id])
                else:
                    called = [_dotted(n.func, aliases)]
                for name in called:
                    if not name:
                        continue
                    rec = {"name": name, "line": n.lineno}
                    if n.args or n.keywords:
                        rec["args"] = len(n.args) + len(n.keywords)
                    if name in names:
                        rec["local"] = True
                    if name in OPENERS:
                        rec["mode"] = _open_mode(n)
                    calls.append(rec)
                name = called[0]
                if name in ("list", "tuple", "sorted", "enumerate", "iter", "next") and n.args and _is_set(n.args[0]):
                    set_iters.append(n.lineno)
            elif isinstance(n, (ast.For, ast.comprehension)) and _is_set(n.iter):
                set_iters.append(getattr(n, "lineno", getattr(n.iter, "lineno", 0)))
    return {"calls": calls, "set_iters": sorted(set(set_iters))}


# The calls whose mode discovery records for the gate: the engine sends the
# gate's own list in the discovery request ("openers"), so the two never
# drift apart; this default is for the worker's Python tests.
OPENERS = {"open", "builtins.open", "io.open", "codecs.open", "os.fdopen", ".open"}


def _is_set(e):
    if isinstance(e, (ast.Set, ast.SetComp)):
        return True
    return isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id in ("set", "frozenset")


def _open_mode(call):
    mode = None
    if len(call.args) >= 2:
        mode = call.args[1]
    for kw in call.keywords:
        if kw.arg == "mode":
            mode = kw.value
    if mode is None:
        return "r"
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return mode.value
    return "?"
