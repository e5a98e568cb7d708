"""The domain: parse-at-the-edge models of alerts, incidents, silences and diagnoses. Pure data, no
I/O.
"""
