"""Shared scripts for tests that run LLM brains in ROS episodes against a loopback server."""

import json

from robot_team.llm import scripted
from robot_team.llm.fakeserver import text, tool_calls


def use_llm_server(monkeypatch, server, *, handover: bool = True) -> None:
    """Point every node's LLM settings at ``server`` (a started ScriptedServer); no fallback.

    ``handover=False`` sets ``manager_takeover_after`` to 0: a manager that stops acting is left
    to the supervisor's deadlines (the backstop a test wants to see).
    """
    for name, value in (('BASE_URL', server.base_url), ('API_KEY', 'test-key'), ('FALLBACK', 'fail'),
                        ('TIMEOUT_S', '10')) + ((('MANAGER_TAKEOVER_AFTER', '0'),) if not handover else ()):
        monkeypatch.setenv(f'ROBOT_TEAM_LLM_{name}', value)


def misbehaving_policies() -> dict:
    """Return the scripted team: the well-behaved one, with each known failure mode tried once.

    The manager 1. calls a robot's tool, 2. echoes the navigation failure without acting (twice:
    the bridge asks once), 3. skips info collection, 4. puts a pre-fetched result into a
    delegation, 5. writes a placeholder reflection first; the info robot 6. claims a false success.
    """
    ideal, done = scripted.IdealManager(), set()

    def once(name):
        first = name not in done
        done.add(name)
        return first

    def manager(body):
        last = body['messages'][-1]
        if last['role'] == 'user':
            ideal.read(body)
            content = last['content']
            if 'Patient' in content and once('operate'):           # 1. calls a robot's tool
                return tool_calls(('navigate_to_pose', {'x': 1.0, 'y': 1.0}))
            if ('nav-1 (navigation' in content and 'failure' in content and once('echo')) or (
                    content.startswith('Nothing is running') and once('echo again')):
                return text('nav-1 failed: HCW #80 unavailable.')   # 2. echoes the failure, does nothing
            nav_ok = any(t['type'] == 'navigation' and t['state'] == 'success' for t in ideal.tasks.values())
            if nav_ok and once('skip'):                              # 3. skips info collection
                return tool_calls(('delegate_task', {'task_type': 'display', 'robot': 'display_robot',
                                                     'reason': 'faster'}))
        reply = ideal(body)
        for call in reply.get('tool_calls') or []:
            args = json.loads(call['function']['arguments'])
            if args.get('task_type') == 'info_collection' and once('prefetch'):   # 4. does the work itself
                args['instructions'] = 'name: Dr. Lucas Brennan, specialty: Physician; just confirm.'
            if call['function']['name'] == 'submit_reflection' and once('placeholder'):   # 5. placeholder
                args['lessons_learned'] = ['TBD']
            call['function']['arguments'] = json.dumps(args)
        return reply

    def info(body):
        res = scripted.results(body)
        if res and res[-1][0] == 'lookup_staff_by_badge' and once('lie'):   # 6. false success claim
            return scripted.report('success', '', 'identified', hcw_id='90', name='Dr. Nobody', specialty='Physician')
        return scripted.info_collection_stepwise(body)   # reads each result, so it can lie about one

    return {**scripted.ideal_policies(), 'manager': manager, 'info_collection_robot': info}


def escalate_only(name: str = 'onboarding'):
    """Return scenario ``name`` whose supervisor only escalates when the manager misses a deadline.

    No takeover: the LLM keeps the manager's role after the human's decision, so a scripted
    manager can show its later failure modes (the default safe default hands the role over).
    """
    from robot_team.contracts.config import load_scenario
    scenario = load_scenario(name)
    return scenario.model_copy(update={'deadlines': scenario.deadlines.model_copy(update={'safe_default': 'escalate'})})
