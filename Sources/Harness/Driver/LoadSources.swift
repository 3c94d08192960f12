import PushModel

/// Ready-made ``LoadSource``s for the two shapes the suite drives: message storms (one push per
/// iteration) and group calls (one fan-out per iteration).
public enum LoadSources {
    /// A message storm: iteration i sends `pushes[i % pushes.count]`; `limit` iterations at most
    /// (nil: as many as the plan asks for). Ends at once when `pushes` is empty.
    public static func cycling(_ pushes: [PushRequest], limit: Int? = nil) -> LoadSource {
        { iteration in
            guard !pushes.isEmpty, iteration < (limit ?? .max) else { return nil }
            return .push(pushes[iteration % pushes.count])
        }
    }

    /// Group calls: every iteration rings all of `pushes` at once (e.g. the 10,000 devices of a
    /// poolse group); `limit` calls at most.
    public static func fanOut(_ pushes: [PushRequest], limit: Int? = nil) -> LoadSource {
        { iteration in
            guard !pushes.isEmpty, iteration < (limit ?? .max) else { return nil }
            return .fanOut(pushes)
        }
    }
}
