"""Container images: references, digests, daemonless readers, layer walking, catalogers.

May import only the manifest model (`provenance.model`). The catalogers are pure parse
functions (syft's pattern) that the host collectors reuse through this package's public API.
"""
