package org.vllmrouter.core.session;

/**
 * Hears each session's {@link Trajectory} once, when the session ends: released by finish_session, expired, or
 * evicted. Called by the session table, possibly under its lock, so it must only record (a histogram observation).
 */
@FunctionalInterface
public interface TrajectoryEnds {
    TrajectoryEnds NONE = trajectory -> { };

    void ended(Trajectory trajectory);
}
