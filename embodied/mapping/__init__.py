"""Mapping: the mobile robot's metric map, apart from the scene graph.

    FreeSpaceMap      occupancy evidence from head depth, and A* paths over it  (freespace.py)
    segment_rooms     the free-space grid cut into rooms at doorways            (rooms.py)
    DepthLocaliser    odometry drift corrected by registering depth to the map  (localise.py)

Nothing here reads the scene graph: the memory takes rooms from a FreeSpaceMap
(``SpatialMemory.update_rooms``), and the agent feeds the map and the localiser.
"""

from embodied.mapping.freespace import FreeSpaceMap
from embodied.mapping.localise import DepthLocaliser, LocaliserConfig
from embodied.mapping.rooms import RoomConfig, segment_rooms

__all__ = ["DepthLocaliser", "FreeSpaceMap", "LocaliserConfig", "RoomConfig", "segment_rooms"]
