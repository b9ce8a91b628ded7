"""`prov serve`: a recording front for servers prov cannot probe from inside.

front (the loopback HTTP/1.1 front, run under the supervisor, recording through the
in-process probe's recorder), describe (what the upstream says of itself, as observed
facts of the front's run).
"""
