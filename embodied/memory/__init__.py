"""Memory: a spatial scene graph and an episodic event log, kept from perception frames.

    from embodied.perception import Perceiver
    from embodied.memory import MemoryConfig, SpatialMemory
    perceive = Perceiver(env.unwrapped.labels)
    memory = SpatialMemory(MemoryConfig.for_detector("masks"))
    memory.update(perceive(obs, t))
    memory.update_rooms(freespace)      # a mobile robot: room nodes from its own FreeSpaceMap
"""

from embodied.mapping.rooms import RoomConfig
from embodied.memory.config import DetectorProfile, MemoryConfig
from embodied.memory.events import ADD, DELETE, NOOP, UPDATE, Event, EventLog
from embodied.memory.memory import SpatialMemory

__all__ = ["ADD", "DELETE", "NOOP", "UPDATE", "DetectorProfile", "Event", "EventLog", "MemoryConfig", "RoomConfig",
           "SpatialMemory"]
