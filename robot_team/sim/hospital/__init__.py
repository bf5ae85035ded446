"""The hospital's systems on the ED floor, without ROS: HCWs, RTLS, paging, badge readers, displays.

:class:`~robot_team.sim.hospital.engine.HospitalEngine` is pure and deterministic: the same floor,
staff seed, scenario and sequence of calls and robot observations give the same events.
``sim/hospital_node.py`` wraps it in the ``hospital_systems`` node; this package imports no rclpy.

The engine (:mod:`~robot_team.sim.hospital.engine`: time, doors, arrivals, checkpoints) composes
one module per concern: :mod:`~robot_team.sim.hospital.staff` (the HCWs, the RTLS view),
:mod:`~robot_team.sim.hospital.robot_watch` (the robots as seen, stop detection),
:mod:`~robot_team.sim.hospital.paging`, :mod:`~robot_team.sim.hospital.hcw_motion` (waiting,
following, entering rooms), :mod:`~robot_team.sim.hospital.readers` (badge readers) and
:mod:`~robot_team.sim.hospital.displays` (room screens).

The hospital knows the robots only as a real hospital would: from where they are seen
(:meth:`~robot_team.sim.hospital.engine.HospitalEngine.observe_robot`, fed by the node from each
robot's ``amcl_pose``, ``odom`` or TF). It never sees a navigation goal, so whatever moves the
robots (the embedded motion simulator, Gazebo with Nav2, a real floor) the HCWs behave the same.

What is simulated
-----------------
* HCWs from the staff seed stand in their area's room (distinct spots); the scenario's
  ``staff_overrides`` change availability, detail or area; its ``staff_changes`` change an HCW's
  availability and detail (a break, a code blue, back) or badge (a mix-up) at a sim time
  (``staff_changed``).
* The patient of the scenario arrives at ``patient.arrival_time_s`` (``patient_arrival``).
* Paging: an available HCW acknowledges after ``page_response_delay_s``; busy ones never do (nor
  one who became busy before answering); off-shift HCWs do not carry a pager (the page is not
  delivered).
* Following, inferred from the robot's observed poses: an HCW who acknowledged a page naming a
  robot waits where they are until that robot comes within 2.0 m (in line of sight): seen there,
  or seen passing there, its way between two positions seen one after the other (a straight
  segment) coming that close, however far apart the two were. They walk to the point where it
  came closest, then about 1.0 m behind it along the trail of its observed positions (where two
  positions seen one after the other are not in line of sight, the trail goes through the doors
  of the rooms they are in: a robot seen rarely is still followed through doors, past their
  badge readers).
  A robot counts as *stopped* once its odometry (the twist of ``odom``, which every base
  controller publishes, moving or not) has reported it standing (under 0.01 m/s and 0.01 rad/s)
  for 1.0 s by its stamps. Without odometry, it counts as stopped once its observed poses show it
  within 5 cm of one spot for 1.0 s, or once nothing was heard of it for 3.0 s plus the longest
  delay with which its last 20 poses arrived, and for two updates (a localizer such as AMCL
  publishes nothing while the robot stands still; poses that arrive late, or a jump of the clock,
  are not taken for silence; a loaded host can still delay poses past that, which odometry rules
  out: it stops only on a report of standing, never on silence).
  When the robot stops at the door approach pose of a room (not the HCW's own
  area), the HCW walks through the door into that room (``hcw_entering``, then
  ``hcw_arrived``). When it stops inside such a room, the HCW follows it in and stays
  (``hcw_arrived``). These are tests of where the robot stands once stopped, on its last pose.
  A page that names the room the HCW is needed in (``room``, as a hospital's paging system
  carries the location) makes that room the only one they go into, as a person who read the
  page would: every other stop of the robot (the pickup, a pause) is not an arrival, and the
  room they rest in may be it (led out to its door, they walk back in).
* Badge readers: an HCW whose way enters a reader's zone (its radius) scans their badge once per
  entry (the badge ID is the scenario's ``badge_overrides`` entry, if any, else the directory's).
  The test is on the segments walked between two updates, not on the positions reached: a step
  that passes through a zone scans there (at the step's closest point to the reader) even when
  it starts and ends outside it, however long the step; zones passed in one step scan in the
  order passed; a step that comes no closer than the radius does not scan. An HCW who arrives in
  a room without a scan at its door (their way in kept farther than the radius from the reader,
  e.g. through the far side of a wide gap) badges at that room's reader on arrival: one does not
  get in otherwise. Either way, one scan per entry.
* Closed doors (``scenario.blocked_doors``) block HCWs too (``hcw_entry_blocked``). Doors closing
  and opening at given times (``scenario.door_changes``) do so from then on (``door_changed``;
  the doors are the access control's, so the hospital records them); an HCW kept out of a room
  tries again once a door opened.
* Room displays: :meth:`~robot_team.sim.hospital.engine.HospitalEngine.render_display` renders and
  keeps each room's screen.

Events (:class:`~robot_team.sim.common.SimEvent`, ground truth): ``patient_arrival``,
``staff_changed``, ``door_changed``, ``page_delivered``, ``page_acknowledged``, ``hcw_following``,
``hcw_entering``, ``hcw_arrived``, ``hcw_entry_blocked``, ``badge_scan``, ``display_shown``.

Units: SI (m, s, rad), poses in the map frame (REP-103/105).
"""

from robot_team.sim.common import SimInputError
from robot_team.sim.hospital.engine import MAX_SUBSTEP_S, HospitalEngine
from robot_team.sim.hospital.hcw_motion import DOOR_MATCH_M, FOLLOW_DISTANCE_M, FOLLOW_TRIGGER_M
from robot_team.sim.hospital.paging import Page
from robot_team.sim.hospital.robot_watch import (DELAYS_KEPT, MAX_DELAY_S, SILENT_STOP_S, STANDING_SPEED,
                                                 STANDING_YAW_RATE, STILL_TOLERANCE_M, STOP_DWELL_S)
from robot_team.sim.hospital.staff import StaffRecord

__all__ = ['HospitalEngine', 'Page', 'StaffRecord', 'SimInputError', 'FOLLOW_TRIGGER_M', 'FOLLOW_DISTANCE_M',
           'DOOR_MATCH_M', 'STILL_TOLERANCE_M', 'STOP_DWELL_S', 'SILENT_STOP_S', 'DELAYS_KEPT', 'MAX_DELAY_S',
           'STANDING_SPEED', 'STANDING_YAW_RATE', 'MAX_SUBSTEP_S']
