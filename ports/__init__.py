"""The edge of the hexagon.

``strongroom.ports.driving`` is the application's API: the use cases behind the one
``Strongroom`` facade that HTTP, the CLI, the worker and embedders call.
``strongroom.ports.driven`` holds the Protocols the use cases need from the outside, which
adapters implement.
"""
