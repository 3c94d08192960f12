import Descriptors
import PushproofCLI

// Thin shell: all behaviour lives in PushproofCLI so tests can run commands in-process.
// Writes to a peer or child that has gone fail with EPIPE rather than kill the process.
ignoreBrokenPipeSignal()
returnLargeFreedBlocksToTheSystem()
exitProcess(with: await PushproofCommand.main(Array(CommandLine.arguments.dropFirst())))
