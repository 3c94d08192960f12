// Module MockGateway: see Package.swift for its place in the layout.
