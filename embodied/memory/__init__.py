"""Memory: spatial scene graph + episodic event log over perception frames.

from embodied.perception import Perceiver
from embodied.memory import SpatialMemory
perceive, memory = Perceiver(env.unwrapped.labels), SpatialMemory()
memory.update(perceive(obs, t))
memory.update_rooms(freespace)      # a mobile robot: room nodes from its own FreeSpaceMap
"""

from embodied.memory.config import MemoryConfig
from embodied.memory.events import ADD, DELETE, NOOP, UPDATE, Event, EventLog
from embodied.memory.memory import SpatialMemory
from embodied.mapping.rooms import RoomConfig

__all__ = ["ADD", "DELETE", "NOOP", "UPDATE", "Event", "EventLog", "MemoryConfig", "RoomConfig", "SpatialMemory"]
