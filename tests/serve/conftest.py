from tests.serve.test_serve import installed, serving  # noqa: F401 - the fixtures, for test_remote too
