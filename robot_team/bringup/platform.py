"""The mobile robots' platform: a differential-drive base with a 2-D lidar, as one set of figures.

Gazebo's robot models (:mod:`robot_team.bringup.gazebo`), Nav2's costmaps, controller and
velocity limits (:mod:`robot_team.bringup.nav2`) and the embedded simulator (its grid inflates
walls by the footprint radius, robots drive at ``max_speed``) use these figures, so a robot is
the same size and as fast everywhere. SI units (m, s, rad, kg); frames REP-105.
"""

from __future__ import annotations

from dataclasses import dataclass

from robot_team.contracts.names import RobotId, Role

MOBILE_ROBOTS: tuple[RobotId, ...] = tuple(RobotId(r.value) for r in Role if r is not Role.MANAGER)
"""The robots with a base (a Gazebo model, a Nav2 stack, a dock): every robot but the manager,
which runs on the team's server."""

DISPLAY_ROBOT = Role.DISPLAY.value
"""The robot that carries a screen."""


@dataclass(frozen=True)
class Lidar:
    """A planar lidar: ``samples`` beams over [-pi, pi), ``min_range``..``max_range`` m, ``rate_hz`` scans/s.

    ``height`` is the scan plane above the floor (m); the beams start outside the chassis
    (``min_range`` > chassis radius) so that the robot never sees itself.
    """

    samples: int = 360
    min_range: float = 0.25
    max_range: float = 12.0
    rate_hz: float = 10.0
    height: float = 0.18
    noise_stddev: float = 0.01


@dataclass(frozen=True)
class BasePlatform:
    """A differential-drive base; ``base_link`` is on the floor, at the centre between the wheels.

    Attributes
    ----------
    footprint_radius
        Radius of the circle that contains the whole robot, m (Nav2's ``robot_radius``; the
        embedded simulator's grid inflation radius).
    chassis_radius, chassis_height, chassis_clearance, mass
        The chassis cylinder (m, m, m above the floor, kg).
    wheel_radius, wheel_width, wheel_separation
        Drive wheels, m.
    caster_radius
        Two frictionless spheres front and back, m.
    max_speed, max_yaw_rate, max_accel, max_yaw_accel
        Velocity and acceleration limits (m/s, rad/s, m/s^2, rad/s^2).
    lidar
        The 2-D lidar on the chassis' front, at the base's centre axis.
    """

    footprint_radius: float = 0.3
    chassis_radius: float = 0.2
    chassis_height: float = 0.2
    chassis_clearance: float = 0.05
    mass: float = 15.0
    wheel_radius: float = 0.08
    wheel_width: float = 0.04
    wheel_separation: float = 0.46
    caster_radius: float = 0.04
    max_speed: float = 0.5
    max_yaw_rate: float = 1.5
    max_accel: float = 1.0
    max_yaw_accel: float = 3.0
    lidar: Lidar = Lidar()


PLATFORM = BasePlatform()
"""The platform of every mobile robot."""


@dataclass(frozen=True)
class Screen:
    """The display robot's screen: ``width`` x ``height`` m, its centre ``elevation`` m above the floor."""

    width: float = 0.55
    height: float = 0.35
    elevation: float = 1.1


SCREEN = Screen()
