import sibling


def answer():
    return sibling.VALUE + 1
