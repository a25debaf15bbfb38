"""How discovery builds a method's receivers the way the class's own users
do, fixed in advance so a witness stays one input.

Each class is sketched from its module's ast (sketch_class); once every
module is parsed, resolve_receivers looks across the import root and gives
each method's receiver its builds:

- examples: the calls of the class (or of one of its class methods) in the
  docstrings of its module, of the class and of its methods, with literal
  arguments: [call, [argument sources]];
- own: whether the class's own constructor is called (not for an abstract
  class); the constructor a class inherits from a base of the package is
  its constructor;
- recipes: other ways to build one, each {"call", "arity", "takes"} called
  with ladder values: its alternative constructors (class and static
  methods that return the class), the module's functions annotated to
  return it, and its concrete subclasses in the package (the way a mixin
  is used);
- module: the method's module, which names the calls' own module.

A call is [module, qualified name]; None is the method's class itself.
What a call takes is, per parameter, a kind (kinds.name_kind) or a
recipe of another class of the package: the parameter is annotated with
that class, and gets an instance of it. builds["takes"], when given, is
that of the class's own constructor.
"""

import ast

from .kinds import _last_name, annotation_kind, name_kind
from .ladder import MAX_RECEIVER_ARITY

# At most this many examples and recipes per class: the receivers take
# from each in turn (ladder.receivers_of), at most MAX_RECEIVERS in all.
MAX_EXAMPLES = 3
MAX_RECIPES = 3

# The prefixes of calls whose answer moves between any two runs (the
# gate's, in the discovery request): a callee whose body makes one builds
# no receiver, or every method called on what it built would answer what
# it read (Arrow.now().weekday()).
MOVING = ()


def moves(facts):
    """Whether a body's calls read a clock or fresh randomness."""
    return any(c["name"].startswith(p) for c in facts.get("calls", ()) for p in MOVING)


def sketch_class(node, module_doc, facts_of):
    """What resolving a class's receivers needs of its ast; facts_of
    gives a function node's gate facts."""
    alts, classmethods = [], set()
    docs = [module_doc, _doc(node)]
    for n in node.body:
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        docs.append(_doc(n))
        kind = next((_last_name(d) for d in n.decorator_list if _last_name(d) in ("classmethod", "staticmethod")), "")
        if not kind or isinstance(n, ast.AsyncFunctionDef):
            continue
        classmethods.add(n.name)
        if _returns(n, node.name, kind == "classmethod") and not moves(facts_of(n)):
            sig = signature(n, bound=kind == "classmethod")
            if sig is not None and len(alts) < MAX_RECIPES:
                alts.append(dict(sig, attr=n.name))
    return {
        "name": node.name,
        "bases": [_last_name(b.value if isinstance(b, ast.Subscript) else b) for b in node.bases],
        "init": _init(node),
        "abstract": any(_last_name(d) in ("abstractmethod", "abstractproperty")
                        for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                        for d in n.decorator_list),
        "alts": alts,
        "examples": _examples(docs, node.name, classmethods),
        "moves": any(moves(facts_of(n)) for n in node.body
                     if isinstance(n, ast.FunctionDef) and n.name in ("__init__", "__new__", "__post_init__")),
    }


def sketch_factory(node, facts_of):
    """A module-level function annotated to return a class: (class name,
    its signature), or None."""
    if isinstance(node, ast.AsyncFunctionDef) or not node.returns or moves(facts_of(node)):
        return None
    names = _names(node.returns)
    sig = signature(node)
    if not names or sig is None:
        return None
    return names[0], dict(sig, attr=node.name)


def signature(node, bound=False, keywords=False):
    """A callable's required positional parameters: arity, kinds and each
    one's annotated names (a class of the package builds it); None when
    it requires keywords, unless keywords (a constructor is called as
    before, and raises)."""
    a = node.args
    positional = a.posonlyargs + a.args
    required = len(positional) - len(a.defaults)
    if bound and positional:
        positional, required = positional[1:], max(0, required - 1)
    if not keywords and any(d is None for d in a.kw_defaults):
        return None
    params = positional[:required]
    return {"arity": required,
            "kinds": [name_kind(p.arg, annotation_kind(p.annotation)) for p in params],
            "anns": [_names(p.annotation) or ["~" + p.arg.lower().strip("_")] for p in params]}


def _init(node):
    """The class's own constructor's signature, its fields' for a
    dataclass, attrs class or NamedTuple, or None when it inherits one."""
    for n in node.body:
        if isinstance(n, ast.FunctionDef) and n.name == "__init__":
            return signature(n, bound=True, keywords=True)
    fielded = any(_last_name(d.func if isinstance(d, ast.Call) else d) in _FIELD_DECORATORS for d in node.decorator_list) or \
        any(_last_name(b) == "NamedTuple" for b in node.bases)
    if not fielded:
        return None
    kinds, anns = [], []
    for n in node.body:
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.value is None and n.simple:
            if _last_name(n.annotation.value if isinstance(n.annotation, ast.Subscript) else n.annotation) in ("ClassVar", "InitVar"):
                continue
            kinds.append(name_kind(n.target.id, annotation_kind(n.annotation)))
            anns.append(_names(n.annotation))
    return {"arity": len(kinds), "kinds": kinds, "anns": anns}


# Decorators that make a class's fields its constructor's parameters, in
# order: dataclasses, attrs (classic and next-generation), NamedTuple's
# class syntax.
_FIELD_DECORATORS = {"dataclass", "define", "frozen", "mutable", "s", "attrs", "dataclass_transform"}


def _doc(node):
    try:
        return ast.get_docstring(node, clean=False) or ""
    except TypeError:
        return ""


def _names(ann):
    """The class names an annotation holds, outermost first: Markdown,
    "Markdown", Optional[Markdown], Markdown | None."""
    if ann is None:
        return []
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        try:
            ann = ast.parse(ann.value, mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return []
    out = []
    try:
        for sub in ast.walk(ann):
            name = _last_name(sub) if isinstance(sub, (ast.Name, ast.Attribute)) else ""
            if name and name[0].isupper() and name not in _TYPING and name not in out:
                out.append(name)
    except RecursionError:
        return []
    return out


_TYPING = {"Optional", "Union", "List", "Dict", "Set", "Tuple", "Type", "Any", "Callable", "Sequence",
           "Mapping", "Iterable", "Iterator", "Annotated", "Literal", "ClassVar", "Final", "None"}


def _last_word(name):
    """The last word of a CamelCase name, lower case: BlockParser ->
    parser, HTTPServer -> server."""
    i = len(name) - 1
    while i > 0 and not (name[i].isupper() and name[i - 1].islower()):
        i -= 1
    return name[i:].lower()


def _returns(node, cls, classmethod):
    """Whether a class or static method builds the class: annotated to
    return it (or Self), or returning cls(...) or Class(...)."""
    names = _names(node.returns)
    if names:
        return names[0] in (cls, "Self")
    first = node.args.args[0].arg if classmethod and node.args.args else None
    for sub in ast.walk(node):
        if isinstance(sub, ast.Return) and isinstance(sub.value, ast.Call):
            f = sub.value.func
            if isinstance(f, ast.Name) and f.id in (cls, first):
                return True
    return False


def _examples(docs, cls, classmethods):
    """The calls of cls (or of cls.m, a class method) in docstring
    examples whose arguments are all literals: [call, [sources]], call
    None for the class itself, ".m" for its class method."""
    out = []
    for doc in docs:
        if ">>>" not in doc:
            continue
        for line in doc.splitlines():
            line = line.strip()
            if not line.startswith(">>> "):
                continue
            try:
                tree = ast.parse(line[4:].strip())
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue
            for sub in ast.walk(tree):
                if not isinstance(sub, ast.Call) or sub.keywords or any(isinstance(a, ast.Starred) for a in sub.args):
                    continue
                f = sub.func
                if isinstance(f, ast.Name) and f.id == cls:
                    call = None
                elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == cls and f.attr in classmethods:
                    call = "." + f.attr
                else:
                    continue
                try:
                    for a in sub.args:
                        ast.literal_eval(a)
                except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                    continue
                example = [call, [ast.unparse(a) for a in sub.args]]
                if example not in out:
                    out.append(example)
                if len(out) == MAX_EXAMPLES:
                    return out
    return out


class Index:
    """The classes and factories of every module discovery parsed, by
    import root, to resolve a name the way the package's own imports
    mostly do (resolve)."""

    def __init__(self):
        self.classes = {}  # (root, name) -> [(module, sketch)]
        self.factories = {}  # (root, module, class name) -> [signature]

    def add(self, root, module, sketches, factories):
        for s in sketches:
            self.classes.setdefault((root, s["name"]), []).append((module, s))
            # A parameter that says nothing is known by its name: parser
            # is a BlockParser, the class's last word.
            self.classes.setdefault((root, "~" + _last_word(s["name"])), []).append((module, s))
        for cls, sig in factories:
            self.factories.setdefault((root, module, cls), []).append(sig)

    def finish(self):
        for found in self.classes.values():
            found.sort(key=lambda ms: ms[0])
        # A class's subclasses in its root: the way a mixin or an abstract
        # base is used.
        self.children = {}
        for (root, name), found in sorted(self.classes.items()):
            if name.startswith("~"):
                continue
            for module, s in found:
                for b in s["bases"]:
                    parent = self.resolve(root, module, b)
                    if parent is not None and parent[1] is not s:
                        self.children.setdefault(id(parent[1]), []).append((module, s))

    def resolve(self, root, module, name):
        """The class a name in module means: the module's own, else the
        one in the module nearest it in its package (most of the dotted
        name shared, then first by name); never one of another top-level
        package, which a root of several distributions holds."""
        best, shared = None, 0
        here = module.split(".")
        for m, s in self.classes.get((root, name), ()):
            if m == module:
                return m, s
            n = 0
            for a, b in zip(here, m.split(".")):
                if a != b:
                    break
                n += 1
            if n > shared:
                best, shared = (m, s), n
        return best

    def constructor(self, root, module, s, depth=0):
        """A class's constructor's signature: its own, or the nearest
        base's of the package; arity 0 when neither is known."""
        if s["init"] is not None:
            return s["init"]
        if depth < 8:
            for b in s["bases"]:
                parent = self.resolve(root, module, b)
                if parent is not None and parent[1] is not s:
                    return self.constructor(root, parent[0], parent[1], depth + 1)
        return {"arity": 0, "kinds": [], "anns": []}

    def recipe(self, root, module, s, sig, call, depth):
        """A recipe calling call with ladder values for sig, the
        parameters annotated with another class of the package given an
        instance of it; None when it requires more than the receivers
        cover."""
        if sig["arity"] > MAX_RECEIVER_ARITY:
            return None
        takes = list(sig["kinds"])
        for i, anns in enumerate(sig.get("anns", [])):
            if takes[i] or depth >= 3:
                continue
            for name in anns:
                other = self.resolve(root, module, name)
                if other is None or other[1] is s:
                    continue
                inner = self.recipe(root, other[0], other[1], self.constructor(root, other[0], other[1]),
                                    [other[0], other[1]["name"]], depth + 1)
                if inner is not None and not other[1]["abstract"]:
                    takes[i] = inner
                    break
        return {"call": call, "arity": sig["arity"], "takes": takes}

    def builds(self, root, module, s):
        """A class's receiver: arity and kinds of its constructor, and its
        builds (see the module's doc) when it has more than its own
        constructor."""
        sig = self.constructor(root, module, s)
        builds = {}
        own = self.recipe(root, module, s, sig, None, 0)
        if s["examples"]:
            builds["examples"] = [[None if c is None else [module, s["name"] + c], a] for c, a in s["examples"]]
        recipes = []
        for alt in s["alts"]:
            r = self.recipe(root, module, s, alt, [module, s["name"] + "." + alt["attr"]], 0)
            if r is not None:
                recipes.append(r)
        for sig2 in self.factories.get((root, module, s["name"]), []):
            r = self.recipe(root, module, s, sig2, [module, sig2["attr"]], 0)
            if r is not None:
                recipes.append(r)
        for m, sub in self._concrete(s):
            if sub["moves"]:
                continue
            r = self.recipe(root, m, sub, self.constructor(root, m, sub), [m, sub["name"]], 0)
            if r is not None:
                recipes.append(r)
        if recipes:
            builds["recipes"] = recipes[:MAX_RECIPES]
        if s["abstract"] or own is None:
            builds["own"] = False
        elif own["takes"] != sig["kinds"]:
            builds["takes"] = own["takes"]  # with the instances its annotations name
        receiver = {"arity": sig["arity"], "kinds": sig["kinds"]}
        if builds and (builds.get("examples") or builds.get("recipes") or "takes" in builds or builds.get("own") is False):
            builds["module"] = module
            receiver["builds"] = builds
        return receiver

    def _concrete(self, s, depth=0):
        """The concrete subclasses of s in its root, the nearest first, at
        most two."""
        out = []
        for m, sub in self.children.get(id(s), []):
            if not sub["abstract"]:
                out.append((m, sub))
            elif depth < 2:
                out.extend(self._concrete(sub, depth + 1))
            if len(out) >= 2:
                break
        return out[:2]
