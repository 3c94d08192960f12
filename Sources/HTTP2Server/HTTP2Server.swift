// Module HTTP2Server: see Package.swift for its place in the layout.
