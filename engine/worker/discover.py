"""Discover mode: each module parsed with ast, never imported; its
functions, their signatures and ladders, and the facts the gate needs."""

import ast
import os
import resource
import stat

from .bytecode import bytecode
from .canon import display
from .channel import Channel, Kind, _encode
from . import builders
from .builders import Index, sketch_class, sketch_factory
from .ladder import MAX_ARITY, MAX_RECEIVER_ARITY, Built, doctest_key, ladder_key, receiver_key, rungs_of
from .testcases import test_classes
from . import facts
from .facts import _bindings, _collect_imports, _facts, _function_facts
from .signatures import _describe_class, _describe_function, _is_overload


def discover(req):
    ch = Channel(req.get("nonce", ""))
    limit = req.get("address_space_limit")
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if req.get("openers"):
        facts.OPENERS = set(req["openers"])
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
            ch.send({"k": Kind.LADDER, "rungs": {k: [display(r) for r in rungs]}})
        else:
            rec = {"k": Kind.LADDER, "rungs": {k: [display(args) for _, args in rungs]},
                   "receivers": {k: [show_args(r) for r, _ in rungs]}}
            if any(r.call is not None for r, _ in rungs):
                rec["callees"] = {k: [r.callee() for r, _ in rungs]}
            ch.send(rec)
    ch.send({"k": Kind.DONE}, flush=True)


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
    rec = {"k": Kind.MODULE, "rel": rel}
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
    try:
        _describe_tree(rec, tree, path, rel, src, code)
    except Exception as e:  # RecursionError, MemoryError and the like
        # A fault of discovery's own on one module's ast: that module is
        # reported, and the scan goes on with the others.
        for k in ("functions", "classes", "factories", "module_facts", "code"):
            rec.pop(k, None)
        rec["status"] = "unparseable"
        rec["error"] = "discovery failed on its ast (a fault of this tool: please report it): %s: %s" % (
            type(e).__name__, _one_line(e))
    return rec


def _describe_tree(rec, tree, path, rel, src, code):
    """Fills a parsed module's record: its functions and methods, its
    classes' sketches and factories, the facts of its top level, and its
    bytecode when asked."""
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
