// Module SpecValidator: see Package.swift for its place in the layout.
