"""Mapping: metric maps from depth, apart from the scene graph.

    FreeSpaceMap      occupancy evidence from head depth, and A* paths over it  (freespace.py)
    segment_rooms     the free-space grid cut into rooms at doorways            (rooms.py)
    DepthLocaliser    odometry drift corrected by registering depth to the map  (localise.py)
    LookedAt          the ground cells any camera has looked at (memory tells a
                      discovery from a thing found again by it)                 (looked_at.py)

Nothing here reads the scene graph: the memory takes rooms from a FreeSpaceMap
(``SpatialMemory.update_rooms``), and the agent feeds the map and the localiser.
"""

from embodied.mapping.freespace import FreeSpaceMap
from embodied.mapping.localise import DepthLocaliser, LocaliserConfig
from embodied.mapping.looked_at import LookedAt
from embodied.mapping.rooms import RoomConfig, segment_rooms

__all__ = ["DepthLocaliser", "FreeSpaceMap", "LocaliserConfig", "LookedAt", "RoomConfig", "segment_rooms"]
