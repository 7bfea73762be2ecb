"""`dgemma eval`: labelled Jev requests in, accuracy, calibration and option-order figures out.

A leaf library like loadtest/: a URL and a JSONL file in, numbers and plots out. It talks to the
gateway over HTTP exactly as any Jev client does.
"""
