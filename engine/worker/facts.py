"""The gate's facts of a function's body, from its ast: the calls it makes,
each resolved through the module's and its own imports, the files it
opens and in what mode, what it iterates; never by running it."""

import ast


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
