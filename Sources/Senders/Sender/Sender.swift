// Module Sender: see Package.swift for its place in the layout.
