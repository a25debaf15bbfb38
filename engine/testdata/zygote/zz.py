def fine(x):
    return repr(x)
