"""Half of the tree the Indexed Job test splits: a set's order."""


def unique_tags(tags):
    return list(set(str(t) for t in tags))


def joined(tags):
    return ",".join(sorted(str(t) for t in tags))
