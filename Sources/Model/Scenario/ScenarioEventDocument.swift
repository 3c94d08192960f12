// An `event` request's event as an out-of-process sender needs it (docs/adapter-protocol.md).
import JSON

extension ScenarioEvent {
    /// The event's object as the file has it, except that a new device it registers carries
    /// its token: the file may leave it out to be derived from the id (ScenarioTokens), which an
    /// adapter in another language cannot do. (A known device registering again is named by
    /// id; `setup` gave its token.)
    public var adapterDocument: JSONValue {
        guard case .deviceRegistered(_, let device, isNew: true) = kind, var object = json.objectValue,
              object["device"]?.objectValue != nil else { return json }
        object["device"] = Scenario.deviceDocument(device)
        return .object(object)
    }
}
