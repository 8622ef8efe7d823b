"""Model of geo-ina: ina's model (schemes/ina/model.py) on the tree by location, so one
partial sum per datacenter crosses the WAN each way (docs/model.md)."""
from schemes.ina.model import model_for

predict = model_for("geo-ina")
