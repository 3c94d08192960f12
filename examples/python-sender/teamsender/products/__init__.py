"""One module per product: its push rules (who gets what) and payloads, each rule carrying the
seed sentence it implements. `backend_for(product)` picks one."""


def backend_for(product):
    from . import concierge, poolse, yama
    backends = {"poolse": poolse.Poolse, "yama": yama.Yama, "concierge": concierge.Concierge}
    if product not in backends:
        raise ValueError(f"unknown product {product!r} (this sender handles {', '.join(sorted(backends))})")
    return backends[product]
