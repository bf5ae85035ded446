"""The rqt plugin "Robot Team Supervisor": the console's widget inside rqt (thin wrapper).

``rqt --standalone robot_team.console.rqt_plugin.RobotTeamSupervisor`` or Plugins > Robot Team
> Robot Team Supervisor. Plugin arguments (``rqt --standalone ... --args --namespace floor2
--operator-id charge_nurse``): ``--namespace`` (the team's, default ``/``) and ``--operator-id``
(also from ``$ROBOT_TEAM_OPERATOR_ID``). The plugin uses rqt's node (spun by rqt) and saves the
operator ID and namespace with the perspective.
"""

from __future__ import annotations

import argparse
import os

from rqt_gui_py.plugin import Plugin

from robot_team.console.presenter import ConsolePresenter
from robot_team.console.ros_client import ConsoleClient
from robot_team.console.widget import SupervisorConsoleWidget


class RobotTeamSupervisor(Plugin):
    """rqt plugin wrapping :class:`~robot_team.console.widget.SupervisorConsoleWidget`."""

    def __init__(self, context):
        super().__init__(context)
        self.setObjectName('RobotTeamSupervisor')
        parser = argparse.ArgumentParser(prog='robot_team_supervisor', add_help=False)
        parser.add_argument('--namespace', default='/', help="the team's ROS namespace")
        parser.add_argument('--operator-id', default=os.environ.get('ROBOT_TEAM_OPERATOR_ID', ''))
        args, _unknown = parser.parse_known_args(context.argv())
        self._namespace = args.namespace
        self._presenter = ConsolePresenter(port=None, operator_id=args.operator_id)
        self._client = ConsoleClient(context.node, self._presenter, args.namespace)
        self._widget = SupervisorConsoleWidget(self._presenter)
        if context.serial_number() > 1:
            self._widget.setWindowTitle(f'{self._widget.windowTitle()} ({context.serial_number()})')
        context.add_widget(self._widget)

    def shutdown_plugin(self):
        """Drop the console's subscriptions and clients from rqt's node."""
        self._client.destroy()

    def save_settings(self, plugin_settings, instance_settings):
        """Save the operator ID with the perspective."""
        instance_settings.set_value('operator_id', self._presenter.operator_id)

    def restore_settings(self, plugin_settings, instance_settings):
        """Restore the operator ID unless one was given on the command line."""
        saved = instance_settings.value('operator_id', '')
        if saved and not self._presenter.operator_id:
            self._presenter.set_operator(str(saved))
