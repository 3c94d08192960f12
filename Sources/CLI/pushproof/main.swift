import PushproofCLI

// Thin shell: all behaviour lives in PushproofCLI so tests can run commands in-process.
exitProcess(with: await PushproofCommand.main(Array(CommandLine.arguments.dropFirst())))
