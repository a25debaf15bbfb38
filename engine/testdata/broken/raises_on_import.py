raise RuntimeError("this module refuses to be imported")


def never():
    return 1
