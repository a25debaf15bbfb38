def self_referential():
    a = [1, 2]
    a.append(a)
    return a


def fifty_megabytes():
    return "x" * (50 * 1000 * 1000)


def opaque():
    return object()


def nested_dicts():
    return {"b": {"y": 2, "x": 1}, "a": [1, (2, 3)]}
