def latin():
    return "café"
