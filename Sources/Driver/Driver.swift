// Module Driver: see Package.swift for its place in the layout.
