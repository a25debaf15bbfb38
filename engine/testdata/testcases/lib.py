class TestResult:  # named Test*, outside a test file: a library class
    def ok(self):
        return True
