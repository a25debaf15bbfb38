def in_namespace():
    return "ns"
